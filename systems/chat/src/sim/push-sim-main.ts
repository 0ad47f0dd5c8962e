/**
 * The push simulator as its own process: `npx casebook chat push-sim` (PORT, default 8117).
 *
 * @example
 * // PORT=8117 node systems/chat/src/sim/push-sim-main.ts
 */
import { installSignalHandlers } from "@casebook/infra/http/shutdown";
import { createPushSim } from "./push-sim.ts";

if (import.meta.main) {
  const sim = createPushSim({ log: { level: "info" } });
  const { url } = await sim.listen({
    port: Number(process.env.PORT ?? 8117),
    host: process.env.HOST ?? "127.0.0.1",
  });
  sim.service.log.info({ url }, "push-sim listening");
  installSignalHandlers(sim.service);
}
