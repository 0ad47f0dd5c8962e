/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on the two writes whose text
 * reached PostgreSQL before the strict edge (a NUL in an event payload or a tenant name was a
 * 500): POST /v1/events as a tenant and POST /v1/admin/tenants as the operator, wired by
 * register-api on PGlite (test/api-fixture.ts). The state probes count the rows those writes
 * make, and read the tenant's subscription list through the API.
 */

import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { eventBodyLimitBytes } from "../src/api/event-routes.ts";
import { ADMIN_TOKEN, type ApiWorld, apiWorld, MAX_PAYLOAD_BYTES } from "./api-fixture.ts";
import { openPgliteTestDatabase } from "./store-backends.ts";

/** Rows of every table a tenant's or the operator's write could add to. */
async function rowCounts(world: ApiWorld): Promise<Record<string, number>> {
  const { rows } = await world.db.query<{ tenants: number; keys: number; events: number; outbox: number }>(
    `SELECT (SELECT count(*)::int FROM tenants) AS tenants, (SELECT count(*)::int FROM tenant_api_keys) AS keys,
            (SELECT count(*)::int FROM events) AS events, (SELECT count(*)::int FROM outbox) AS outbox`,
  );
  return { ...rows[0]! };
}

async function openWorld() {
  const db = await openPgliteTestDatabase();
  const world = await apiWorld(db);
  const tenant = await world.tenant("Edge Co");
  const close = async () => {
    await world.service.close();
    await db.close();
  };
  return { world, tenant, close };
}

let tenantKey = "";
edgeContractSuite({
  name: "webhooks events",
  open: async () => {
    const { world, tenant, close } = await openWorld();
    tenantKey = tenant.key;
    return {
      subject: {
        service: world.service,
        stateProbe: async () => ({
          rows: await rowCounts(world),
          subscriptions: (await world.request("GET", "/v1/subscriptions", { key: tenant.key })).body,
        }),
      },
      close,
    };
  },
  write: {
    method: "POST",
    url: "/v1/events",
    body: { type: "invoice.paid", payload: { note: "paid", cents: 500 } },
  },
  fields: { "/type": "string", "/payload": "object" },
  stringField: "/payload/note",
  bodyLimitBytes: eventBodyLimitBytes(MAX_PAYLOAD_BYTES),
  wrongMethod: { method: "GET", allow: "POST" },
  auth: { header: "authorization", valid: () => `Bearer ${tenantKey}`, wrong: "Bearer whk_not_a_real_key" },
});

edgeContractSuite({
  name: "webhooks admin tenants",
  open: async () => {
    const { world, close } = await openWorld();
    return { subject: { service: world.service, stateProbe: () => rowCounts(world) }, close };
  },
  write: {
    method: "POST",
    url: "/v1/admin/tenants",
    body: { name: "Globex", weight: 2, deliveryWindowS: 3_600 },
  },
  fields: { "/name": "string", "/weight": "integer", "/deliveryWindowS": "integer" },
  stringField: "/name",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth: { header: "authorization", valid: () => `Bearer ${ADMIN_TOKEN}`, wrong: `Bearer ${ADMIN_TOKEN}x` },
});
