/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts),
 * on chat started by main() as in production: the ops-routes part (405 with Allow, 404).
 * Not yet: the write routes' part (`edgeContractSuite` on POST …/messages with its body,
 * types, limit and credentials) — the API's own validation is tested in socket-e2e.test.ts.
 */
import { opsEdgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";
import { engineEnv } from "./system-fixture.ts";

/** The service's whole state so far: its build info line on /metrics. */
const BUILD_INFO = "chat_build_info";

opsEdgeContractSuite({
  name: "chat",
  open: async () => {
    const engine = await engineEnv();
    const running = await main({ PORT: "0", LOG_LEVEL: "silent", ...engine.env });
    const metrics = async () => (await running.service.app.inject({ url: "/metrics" })).body;
    return {
      subject: {
        service: running.service,
        stateProbe: async () => (await metrics()).split("\n").filter((line) => line.startsWith(BUILD_INFO)),
      },
      close: async () => {
        await running.close();
        await engine.drop();
      },
    };
  },
});
