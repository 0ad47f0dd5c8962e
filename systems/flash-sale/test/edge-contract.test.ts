/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * POST /v1/admin/sales of flash-sale started by main() as in production (PGlite, in-process
 * stock). The state probe counts the sales and their tickets, so a refused request that
 * wrote anything shows.
 */
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { ADMIN_TOKEN, apiWorld } from "./api-fixture.ts";

edgeContractSuite({
  name: "flash-sale admin sales",
  open: async () => {
    const world = await apiWorld();
    return {
      subject: {
        service: world.running.service,
        stateProbe: async () =>
          (
            await world.running.db.query(
              "SELECT (SELECT count(*)::int FROM sales) AS sales, (SELECT count(*)::int FROM tickets) AS tickets",
            )
          ).rows[0],
      },
      close: () => world.close(),
    };
  },
  write: {
    method: "POST",
    url: "/v1/admin/sales",
    body: { name: "edge sale", tickets: 3, perBuyerMax: 2, priceMinor: 100, currency: "EUR" },
  },
  fields: {
    "/name": "string",
    "/tickets": "integer",
    "/perBuyerMax": "integer",
    "/priceMinor": "integer",
    "/currency": "string",
  },
  stringField: "/name",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "POST" },
  auth: {
    header: "authorization",
    valid: () => `Bearer ${ADMIN_TOKEN}`,
    wrong: "Bearer not-the-admin-token-000000",
  },
});
