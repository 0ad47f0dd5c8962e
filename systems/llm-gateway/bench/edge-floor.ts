/**
 * The bench's second floor: the bare relay (`relay-floor.ts`) behind the house's shared edge —
 * infra's service (request id, access log, request histogram, text guard, strict JSON body,
 * error shapes), the bearer hook with the key checked in memory, and the gateway's own
 * `chatRequestSchema` validating the body — then the same relay: the JSON written again, the
 * provider's bytes passed on as they arrive. No routing, no budgets, no accounting, no SSE
 * parsing. Between the bare relay and it: what the shared edge costs a request; between it and
 * our gateway: what the gateway's own work costs. Its own process, started by the bench like the
 * others (PORT, HOST, `/readyz`); `FLOOR_UPSTREAM_URL` is the provider's base (…/v1).
 *
 * @example
 * // FLOOR_UPSTREAM_URL=http://127.0.0.1:8161/v1 PORT=8164 node systems/llm-gateway/bench/edge-floor.ts
 */
import { hash } from "node:crypto";
import { bearerSecurity, createBearerAuth } from "@casebook/infra/http/bearer-auth";
import { createService } from "@casebook/infra/http/service";
import { chatRequestSchema } from "../src/api/chat-schemas.ts";
import { floorUpstream, relayToProvider } from "./floor-relay.ts";

const { pool, chatPath } = floorUpstream();

/** Keys by their sha256, as a key cache holds them: the bench's one key is admitted. */
const keys = new Map([[hash("sha256", "sk-bench", "base64url"), { id: 1 }]]);

const service = await createService({
  name: "llm-gateway-edge-floor",
  version: "0.0.0",
  log: { level: "warn" },
  defaultMetrics: false,
});
const auth = createBearerAuth({
  realm: "edge-floor",
  verify: (key) => keys.get(hash("sha256", key, "base64url")),
});
await service.app.register(async (scope) => {
  scope.addHook("onRequest", auth.authenticate);
  scope.post(
    "/v1/chat/completions",
    { schema: { security: bearerSecurity, body: chatRequestSchema } },
    async (request, reply) => {
      reply.hijack();
      relayToProvider(pool, chatPath, reply.raw, {
        authorization: request.headers.authorization ?? "",
        body: Buffer.from(JSON.stringify(request.body)),
      });
    },
  );
});
await service.listen({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? "127.0.0.1" });
process.once("SIGTERM", () => {
  void service
    .close()
    .then(() => pool.close())
    .finally(() => process.exit(0));
});
