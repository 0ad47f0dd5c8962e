/**
 * The hot writer's tenant cache: one database read per tenant per TTL, a changed ceiling seen
 * once the TTL passes, an unknown tenant never remembered, and the entry count bounded.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { TenantCache } from "../src/store/tenant-cache.ts";
import type { Tenant } from "../src/store/tenant-repository.ts";

function setup() {
  const clock = new ManualClock(0);
  const rows = new Map<string, Tenant>([
    ["acme", { id: "acme", maxSeries: 10, maxSeriesPerMetric: undefined }],
  ]);
  const reads: string[] = [];
  const cache = new TenantCache(
    async (id) => {
      reads.push(id);
      return rows.get(id);
    },
    { clock, ttlMs: 5_000, maxTenants: 2 },
  );
  return { clock, rows, reads, cache };
}

test("a tenant is read once per TTL, and a changed ceiling is seen after it", async () => {
  const { clock, rows, reads, cache } = setup();
  assert.equal((await cache.find("acme"))?.maxSeries, 10);
  rows.set("acme", { id: "acme", maxSeries: 20, maxSeriesPerMetric: undefined });
  clock.advance(4_999);
  assert.equal((await cache.find("acme"))?.maxSeries, 10, "within the TTL: from memory");
  assert.deepEqual(reads, ["acme"]);
  clock.advance(1);
  assert.equal((await cache.find("acme"))?.maxSeries, 20, "past the TTL: read again");
  assert.deepEqual(reads, ["acme", "acme"]);
});

test("an unknown tenant is not remembered: created a moment later, it is found", async () => {
  const { rows, reads, cache } = setup();
  assert.equal(await cache.find("new"), undefined);
  rows.set("new", { id: "new", maxSeries: undefined, maxSeriesPerMetric: undefined });
  assert.equal((await cache.find("new"))?.id, "new");
  assert.deepEqual(reads, ["new", "new"]);
});

test("at most maxTenants entries: the oldest is forgotten first", async () => {
  const { rows, reads, cache } = setup();
  for (const id of ["b", "c"]) rows.set(id, { id, maxSeries: undefined, maxSeriesPerMetric: undefined });
  await cache.find("acme");
  await cache.find("b");
  await cache.find("c"); // evicts acme
  await cache.find("b");
  await cache.find("acme");
  assert.deepEqual(reads, ["acme", "b", "c", "acme"]);
});
