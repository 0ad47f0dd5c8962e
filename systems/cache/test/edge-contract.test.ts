/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on the cache node's HTTP sidecar,
 * started by main() as in production. Its API is RESP on another port; the sidecar serves only
 * the ops routes, so only their part of the contract applies (no body, no credentials). The
 * state probe is the keyspace size /metrics reports.
 */
import { opsEdgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";

opsEdgeContractSuite({
  name: "cache",
  open: async () => {
    const node = await main({ CACHE_PORT: "0", PORT: "0", LOG_LEVEL: "silent", CACHE_MAXMEMORY: "1mb" });
    return {
      subject: {
        service: node.service,
        stateProbe: async () => {
          const metrics = await node.service.app.inject({ url: "/metrics" });
          return metrics.body.split("\n").filter((line) => line.startsWith("cache_keys "));
        },
      },
      close: () => node.close(),
    };
  },
});
