/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on the check API, started by
 * main() as in production, on the in-process store. The state probe is the decision counter
 * of /metrics: a refused request must decide nothing, so spend nothing. With RATE_LIMITER_TOKEN set,
 * a check without the token, or with another, is 401 and decides nothing too.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";

/** RATE_LIMITER_TOKEN: the check API's bearer token (16+ characters). */
const TOKEN = "edge-contract-token-0123456789";

const policies = {
  policies: [
    { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity: 100, ratePerS: 1 } },
  ],
};

edgeContractSuite({
  name: "rate-limiter",
  open: async () => {
    const dir = await mkdtemp(join(tmpdir(), "rl-edge-"));
    const file = join(dir, "policies.json");
    await writeFile(file, JSON.stringify(policies));
    const running = await main({
      PORT: "0",
      RATE_LIMITER_POLICIES: file,
      RATE_LIMITER_TOKEN: TOKEN,
      LOG_LEVEL: "silent",
    });
    const service = running.service;
    return {
      subject: {
        service,
        // Every decision the limiter took, by policy and outcome: a check that spent anything shows here.
        stateProbe: async () => {
          const metrics = await service.app.inject({ url: "/metrics" });
          return metrics.body.split("\n").filter((line) => line.startsWith("ratelimit_decisions_total"));
        },
      },
      close: async () => {
        await running.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  write: {
    method: "POST",
    url: "/v1/check",
    body: { descriptors: { ip: "192.0.2.7", route: "/v1/things" }, cost: 1, policies: ["per-ip"] },
  },
  fields: {
    "/descriptors": "object",
    "/descriptors/ip": "string",
    "/descriptors/route": "string",
    "/cost": "integer",
    "/policies": "array",
  },
  stringField: "/descriptors/ip",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${TOKEN}`,
    wrong: "Bearer not-the-edge-contract-token",
  },
});
