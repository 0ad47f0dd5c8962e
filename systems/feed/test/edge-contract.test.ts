/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts),
 * on feed started by main() as in production. No route takes a body yet, so only the
 * ops-routes part applies (405 with Allow, 404). With the first write route, switch to
 * `edgeContractSuite`: declare the route and a valid body, each field's JSON type, a string
 * field, the body limit, a wrong method and its Allow, the credentials (or why there are
 * none), and a `stateProbe()` reading what the write changes (a list endpoint, a counter).
 */
import { opsEdgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";

/** The service's whole state so far: its build info line on /metrics. */
const BUILD_INFO = "feed_build_info";

opsEdgeContractSuite({
  name: "feed",
  open: async () => {
    const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
    const metrics = async () => (await running.service.app.inject({ url: "/metrics" })).body;
    return {
      subject: {
        service: running.service,
        stateProbe: async () => (await metrics()).split("\n").filter((line) => line.startsWith(BUILD_INFO)),
      },
      close: () => running.close(),
    };
  },
});
