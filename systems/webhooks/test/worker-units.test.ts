/**
 * The delivery worker's pure pieces, deterministically: per-tenant claim shares (weighted
 * DRR, WH-15/WH-21), the retry pacer (WH-20), Retry-After holds, quantiles from histogram
 * buckets and the metrics built on them (WH-24), the webhook envelope, and the worker's
 * refusal of unsafe options. (The group-commit batcher's test moved with it to kit's
 * group-commit.test.ts.)
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { createMetricsRegistry } from "@casebook/infra/http/metrics";
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import type { HttpSender } from "../src/clients/http-sender.ts";
import { bucketQuantile } from "../src/domain/bucket-quantile.ts";
import { EndpointHolds } from "../src/domain/endpoint-holds.ts";
import { RetryPacer } from "../src/domain/retry-pacer.ts";
import { type TenantDemand, TenantShares } from "../src/domain/tenant-shares.ts";
import { webhookBody } from "../src/domain/webhook-body.ts";
import { storeErrors } from "../src/errors.ts";
import {
  commitTo2xxQuantiles,
  createWorkerMetrics,
  MAX_TENANT_LABELS,
  OTHER_TENANT,
} from "../src/metrics.ts";
import { DeliveryWorker } from "../src/workers/delivery-worker.ts";

const plenty = 1_000_000;
const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

test("WH-21 claim shares: equal weights split the room equally; weights 3:1 split it 3:1", () => {
  const shares = new TenantShares();
  const even = shares.split(
    [
      { tenantId: "a", weight: 1, due: plenty },
      { tenantId: "b", weight: 1, due: plenty },
    ],
    100,
  );
  assert.deepEqual(Object.fromEntries(even), { a: 50, b: 50 });
  const weighted = new TenantShares().split(
    [
      { tenantId: "big", weight: 3, due: plenty },
      { tenantId: "small", weight: 1, due: plenty },
    ],
    100,
  );
  assert.deepEqual(Object.fromEntries(weighted), { big: 75, small: 25 });
});

test("WH-21 claim shares are work-conserving: a flood gets exactly the room the others leave", () => {
  const got = new TenantShares().split(
    [
      { tenantId: "flood", weight: 1, due: 10_000 },
      { tenantId: "quiet", weight: 1, due: 5 },
    ],
    100,
  );
  assert.deepEqual(Object.fromEntries(got), { flood: 95, quiet: 5 });
});

test("WH-15 claim shares: more tenants than slots — the carried credit gives every tenant its turn", () => {
  const shares = new TenantShares();
  const demands: TenantDemand[] = Array.from({ length: 30 }, (_, i) => ({
    tenantId: `t${i}`,
    weight: 1,
    due: plenty,
  }));
  const served = new Map<string, number>();
  for (let round = 0; round < 3; round++) {
    const got = shares.split(demands, 10);
    assert.equal(sum(got), 10);
    for (const [id, n] of got) served.set(id, (served.get(id) ?? 0) + n);
  }
  assert.equal(served.size, 30, "every tenant served within 3 rounds");
  assert.ok([...served.values()].every((n) => n === 1));
});

test("WH-15 claim shares over many rounds follow the weights; credit of an idle tenant is forgotten", () => {
  const shares = new TenantShares();
  const demands = [1, 2, 5].map((weight) => ({ tenantId: `w${weight}`, weight, due: plenty }));
  // Room 7 a round against weights summing to 8: shares 7/8, 14/8 and 35/8 slots a round.
  const total = new Map<string, number>();
  for (let round = 0; round < 100; round++)
    for (const [id, n] of shares.split(demands, 7)) total.set(id, (total.get(id) ?? 0) + n);
  for (const [id, n] of total) {
    const expected = (100 * 7 * Number(id.slice(1))) / 8;
    assert.ok(Math.abs(n - expected) <= 1.5, `${id}: ${n} slots, weight share ${expected}`);
  }
  const fresh = new TenantShares();
  fresh.split(
    [
      { tenantId: "a", weight: 1, due: plenty },
      { tenantId: "b", weight: 1, due: plenty },
    ],
    1,
  );
  const afterIdle = fresh.split([{ tenantId: "a", weight: 1, due: plenty }], 1);
  assert.deepEqual(Object.fromEntries(afterIdle), { a: 1 });
});

test("WH-15 claim shares, seeded random demands: never above the room or a tenant's due, never idle room while work is due", () => {
  const rng = seededRandom("tenant-shares");
  const shares = new TenantShares();
  for (let round = 0; round < 500; round++) {
    const demands = Array.from({ length: 1 + Math.floor(rng.next() * 12) }, (_, i) => ({
      tenantId: `t${i}`,
      weight: 1 + Math.floor(rng.next() * 10),
      due: Math.floor(rng.next() * 40),
    }));
    const room = Math.floor(rng.next() * 120);
    const got = shares.split(demands, room);
    const due = demands.reduce((s, d) => s + d.due, 0);
    assert.equal(sum(got), Math.min(room, due));
    for (const d of demands) assert.ok((got.get(d.tenantId) ?? 0) <= d.due);
  }
  assert.throws(() => shares.split([{ tenantId: "x", weight: 0, due: 1 }], 1), RangeError);
});

test("WH-20 retry pacer: first denials wait about one window; a pile-up spreads over the time the budget needs", () => {
  const pacer = new RetryPacer({ windowMs: 10_000, maxDeferMs: 900_000, random: seededRandom("pacer") });
  const first = pacer.deferMs(0, 25);
  assert.ok(first >= 5_000 && first <= 15_000, `one window ×0.5–1.5, got ${first}`);
  let last = 0;
  for (let i = 1; i < 250; i++) last = pacer.deferMs(0, 25);
  assert.ok(last >= 50_000 && last <= 150_000, `the 250th of a window waits ~10 windows, got ${last}`);
  for (let i = 0; i < 100_000; i++) last = pacer.deferMs(1, 1);
  assert.ok(last <= 900_000, "bounded by maxDeferMs");
  pacer.deferMs(10_001, 25);
  assert.equal(pacer.denied, 1, "a new window starts the count again");
});

test("Retry-After holds: the later hold wins, a passed hold is gone, and the map stays bounded", () => {
  const holds = new EndpointHolds({ maxEndpoints: 2 });
  holds.hold("a", 5_000, 0);
  holds.hold("a", 3_000, 0);
  assert.equal(holds.heldUntil("a", 0), 5_000);
  assert.equal(holds.heldUntil("a", 5_000), undefined);
  holds.hold("b", 9_000, 0);
  holds.hold("c", 7_000, 0);
  holds.hold("d", 8_000, 0);
  assert.equal(holds.size, 2);
  assert.equal(holds.heldUntil("c", 0), undefined, "the hold ending soonest made room");
  holds.release("b");
  assert.equal(holds.heldUntil("b", 0), undefined);
});

test("WH-24 quantiles from cumulative buckets interpolate as histogram_quantile does", () => {
  const buckets = [
    { le: 0.1, count: 2 },
    { le: 0.2, count: 6 },
    { le: Number.POSITIVE_INFINITY, count: 8 },
  ];
  assert.ok(Math.abs(bucketQuantile(0.5, buckets)! - 0.15) < 1e-12);
  assert.equal(bucketQuantile(0.99, buckets), 0.2, "a rank in +Inf answers the largest finite bound");
  assert.equal(bucketQuantile(0.5, [{ le: Number.POSITIVE_INFINITY, count: 0 }]), undefined);
  assert.throws(() => bucketQuantile(1.5, buckets), RangeError);
});

test("WH-24 commit→2xx p50/p95/p99 per tenant from the histogram; the tenant label is bounded", async () => {
  const metrics = createWorkerMetrics(createMetricsRegistry({ defaultMetrics: false }));
  for (let i = 1; i <= 100; i++) metrics.commitTo2xx.observe({ tenant: "acme" }, i / 1_000); // 1..100 ms
  const q = await commitTo2xxQuantiles(metrics, "acme");
  assert.equal(q.count, 100);
  assert.ok(q.p50! > 0.025 && q.p50! <= 0.05, `p50 in the 25–50 ms bucket, got ${q.p50}`);
  assert.ok(q.p99! > 0.05 && q.p99! <= 0.1, `p99 in the 50–100 ms bucket, got ${q.p99}`);
  assert.equal((await commitTo2xxQuantiles(metrics, "nobody")).count, 0);
  for (let i = 0; i < MAX_TENANT_LABELS + 5; i++) metrics.tenantLabel(`t${i}`);
  assert.equal(metrics.tenantLabel("one-too-many"), OTHER_TENANT);
  assert.equal(metrics.tenantLabel("acme"), "acme", "known tenants keep their label");
});

test("WH-13 the body is the Standard Webhooks envelope, with the commit time the same on every attempt", () => {
  const body = webhookBody({
    eventType: "invoice.paid",
    eventCreatedAtMs: Date.UTC(2025, 0, 1),
    payload: { id: "in_1" },
  });
  assert.equal(body, '{"type":"invoice.paid","timestamp":"2025-01-01T00:00:00.000Z","data":{"id":"in_1"}}');
});

test("the worker refuses unsafe options: a lease shorter than a request, no send slot", () => {
  const base = {
    db: {} as Database,
    clock: new ManualClock(0),
    random: seededRandom("opts"),
    workerId: "w",
    sender: {} as HttpSender,
    httpDeadlineMs: 10_000,
    leaseMs: 30_000,
    maxInFlight: 4,
    pollIntervalMs: 100,
  };
  assert.throws(
    () => new DeliveryWorker({ ...base, leaseMs: 10_500 }),
    (err) => storeErrors.is(err, "WEBHOOK_LEASE_TOO_SHORT"),
  );
  assert.throws(() => new DeliveryWorker({ ...base, maxInFlight: 0 }), RangeError);
  assert.throws(() => new DeliveryWorker({ ...base, workerId: "" }), RangeError);
  assert.doesNotThrow(() => new DeliveryWorker(base));
});
