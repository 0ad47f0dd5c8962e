/**
 * WH-15: the fair scheduler's rules one at a time — weighted shares across tenants,
 * per-endpoint concurrency and rate limits, Retry-After throttling, bounded queues —
 * and a property test: whatever the interleaving, limits hold and no backlogged tenant
 * waits more than one round.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import fc from "fast-check";
import { type EndpointLimits, FairScheduler, type Lease } from "../src/domain/fair-scheduler.ts";
import { deliveryErrors } from "../src/errors.ts";

const UNLIMITED: EndpointLimits = { maxInFlight: 1_000_000, ratePerS: 1e9, burst: 1e9 };

function scheduler(options: Partial<ConstructorParameters<typeof FairScheduler<number>>[0]> = {}) {
  const clock = new ManualClock(0);
  const s = new FairScheduler<number>({
    clock,
    maxQueuedTotal: 100_000,
    maxQueuedPerTenant: 50_000,
    limitsOf: () => UNLIMITED,
    ...options,
  });
  return { clock, s };
}

function drainPicks(s: FairScheduler<number>, n: number): Lease<number>[] {
  const leases: Lease<number>[] = [];
  for (let i = 0; i < n; i++) {
    const lease = s.pick();
    if (lease === undefined) break;
    leases.push(lease);
    s.complete(lease);
  }
  return leases;
}

test("WH-15 weighted round robin: weights 3 and 1 share attempts 3:1 while both are backlogged", () => {
  const { s } = scheduler({ weightOf: (tenant) => (tenant === "big" ? 3 : 1) });
  for (let i = 0; i < 1_000; i++) {
    s.enqueue({ tenantId: "big", endpointId: "big-1", item: i });
    s.enqueue({ tenantId: "small", endpointId: "small-1", item: i });
  }
  const picks = drainPicks(s, 400).map((l) => l.tenantId);
  assert.equal(picks.filter((t) => t === "big").length, 300);
  assert.equal(picks.filter((t) => t === "small").length, 100);
  assert.deepEqual(picks.slice(0, 8), ["big", "big", "big", "small", "big", "big", "big", "small"]);
});

test("WH-15 inside a tenant, endpoints take turns, and FIFO holds per endpoint", () => {
  const { s } = scheduler();
  for (let i = 0; i < 3; i++) {
    s.enqueue({ tenantId: "t", endpointId: "e1", item: i });
    s.enqueue({ tenantId: "t", endpointId: "e2", item: 10 + i });
  }
  assert.deepEqual(
    drainPicks(s, 10).map((l) => l.item),
    [0, 10, 1, 11, 2, 12],
  );
});

test("WH-15 an endpoint at its concurrency limit waits for complete(); the tenant's others go on", () => {
  const { s } = scheduler({ limitsOf: (e) => (e === "slow" ? { ...UNLIMITED, maxInFlight: 2 } : UNLIMITED) });
  for (let i = 0; i < 5; i++) s.enqueue({ tenantId: "t", endpointId: "slow", item: i });
  for (let i = 0; i < 5; i++) s.enqueue({ tenantId: "t", endpointId: "fast", item: 100 + i });
  const held: Lease<number>[] = [];
  for (let lease = s.pick(); lease !== undefined; lease = s.pick()) {
    if (lease.endpointId === "slow") held.push(lease);
    else s.complete(lease);
  }
  assert.equal(held.length, 2, "two slow attempts in flight, never more");
  assert.deepEqual(s.tenantStats("t"), { queued: 3, inFlight: 2, weight: 1 });
  s.complete(held[0]!);
  assert.equal(s.pick()?.item, 2);
  assert.throws(() => s.complete(held[0]!), RangeError, "a lease completes once");
});

test("WH-15 the per-endpoint rate limit parks the endpoint until its next token", () => {
  const { clock, s } = scheduler({ limitsOf: () => ({ maxInFlight: 100, ratePerS: 10, burst: 2 }) });
  for (let i = 0; i < 5; i++) s.enqueue({ tenantId: "t", endpointId: "e", item: i });
  assert.equal(drainPicks(s, 10).length, 2, "the burst");
  assert.equal(s.nextReadyAtMs(), 100);
  clock.advance(99);
  assert.equal(s.pick(), undefined);
  clock.advance(1);
  assert.equal(drainPicks(s, 10).length, 1);
});

test("WH-15 Retry-After throttles one endpoint; the tenant's other endpoints and other tenants go on", () => {
  const { clock, s } = scheduler();
  for (let i = 0; i < 3; i++) {
    s.enqueue({ tenantId: "t", endpointId: "busy", item: i });
    s.enqueue({ tenantId: "t", endpointId: "calm", item: 10 + i });
    s.enqueue({ tenantId: "u", endpointId: "other", item: 20 + i });
  }
  const first = s.pick()!;
  assert.equal(first.endpointId, "busy");
  assert.ok(s.throttle("busy", 30_000));
  s.complete(first);
  const meanwhile = drainPicks(s, 100);
  assert.ok(meanwhile.every((l) => l.endpointId !== "busy"));
  assert.equal(meanwhile.length, 6);
  assert.equal(s.nextReadyAtMs(), 30_000);
  clock.advance(30_000);
  assert.deepEqual(
    drainPicks(s, 100).map((l) => l.item),
    [1, 2],
  );
  assert.equal(s.throttle("never-seen", 1), false);
});

test("WH-15 bounded queues: a flooding tenant fills its own bound, not everyone's", () => {
  const { s } = scheduler({ maxQueuedTotal: 10, maxQueuedPerTenant: 6 });
  for (let i = 0; i < 6; i++) s.enqueue({ tenantId: "flood", endpointId: "f", item: i });
  const full = (scope: string) => (e: unknown) =>
    deliveryErrors.is(e, "WEBHOOK_QUEUE_FULL") && e.fields.scope === scope;
  assert.throws(() => s.enqueue({ tenantId: "flood", endpointId: "f2", item: 7 }), full("tenant"));
  for (let i = 0; i < 4; i++) s.enqueue({ tenantId: "calm", endpointId: "c", item: i });
  assert.throws(() => s.enqueue({ tenantId: "third", endpointId: "x", item: 0 }), full("total"));
  assert.equal(s.stats().queued, 10);
});

test("WH-15 endpoint states are bounded: idle ones are forgotten once nothing about them matters", () => {
  const { clock, s } = scheduler({
    maxEndpoints: 3,
    limitsOf: () => ({ maxInFlight: 10, ratePerS: 1, burst: 1 }),
  });
  for (const e of ["a", "b", "c"]) s.enqueue({ tenantId: "t", endpointId: e, item: 0 });
  const full = (e: unknown) => deliveryErrors.is(e, "WEBHOOK_QUEUE_FULL") && e.fields.scope === "endpoints";
  assert.throws(() => s.enqueue({ tenantId: "t", endpointId: "d", item: 0 }), full);
  assert.equal(drainPicks(s, 10).length, 3);
  // Their buckets are empty: forgetting them now would hand out a fresh burst.
  assert.equal(s.stats().endpoints, 3);
  assert.throws(() => s.enqueue({ tenantId: "t", endpointId: "d", item: 0 }), full);
  clock.advance(1_000);
  s.enqueue({ tenantId: "t", endpointId: "d", item: 0 });
  assert.equal(s.stats().endpoints, 1);
});

test("WH-15 property: per-endpoint limits and queue bounds hold whatever the interleaving, and nothing gets stuck", () => {
  const op = fc.oneof(
    fc.record({
      kind: fc.constant("enqueue" as const),
      tenant: fc.integer({ min: 0, max: 3 }),
      endpoint: fc.integer({ min: 0, max: 2 }),
    }),
    fc.record({ kind: fc.constant("pick" as const) }),
    fc.record({ kind: fc.constant("complete" as const), index: fc.nat() }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 200 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 300 }), (ops) => checkInterleaving(ops)),
    { numRuns: 150 },
  );
});

type Op =
  | { kind: "enqueue"; tenant: number; endpoint: number }
  | { kind: "pick" }
  | { kind: "complete"; index: number }
  | { kind: "advance"; ms: number };

const WEIGHTS = [1, 2, 3, 1];
const LIMITS: EndpointLimits = { maxInFlight: 2, ratePerS: 20, burst: 3 };

function checkInterleaving(ops: readonly Op[]): void {
  const clock = new ManualClock(0);
  const s = new FairScheduler<number>({
    clock,
    maxQueuedTotal: 40,
    maxQueuedPerTenant: 15,
    weightOf: (t) => WEIGHTS[Number(t)]!,
    limitsOf: () => LIMITS,
  });
  const inFlight = new Map<string, number>();
  const held: Lease<number>[] = [];
  let queued = 0;
  for (const op of ops) {
    if (op.kind === "enqueue") {
      try {
        s.enqueue({ tenantId: String(op.tenant), endpointId: `${op.tenant}-${op.endpoint}`, item: 0 });
        queued += 1;
      } catch (error) {
        assert.ok(deliveryErrors.is(error, "WEBHOOK_QUEUE_FULL"));
      }
    } else if (op.kind === "pick") {
      const lease = s.pick();
      if (lease === undefined) continue;
      queued -= 1;
      const now = (inFlight.get(lease.endpointId) ?? 0) + 1;
      assert.ok(now <= LIMITS.maxInFlight, "per-endpoint concurrency");
      inFlight.set(lease.endpointId, now);
      held.push(lease);
    } else if (op.kind === "complete" && held.length > 0) {
      const [lease] = held.splice(op.index % held.length, 1);
      inFlight.set(lease!.endpointId, inFlight.get(lease!.endpointId)! - 1);
      s.complete(lease!);
    } else if (op.kind === "advance") clock.advance(op.ms);
    assert.equal(s.stats().queued, queued);
    assert.equal(s.stats().inFlight, held.length);
    assert.ok(queued <= 40);
  }
  // Liveness: once in-flight attempts end and time passes, every queued task is picked.
  for (const lease of held) s.complete(lease);
  for (let round = 0; round < 100 && s.stats().queued > 0; round++) {
    clock.advance(1_000);
    drainPicks(s, 1_000);
  }
  const end = s.stats();
  assert.equal(end.queued, 0, "every task picked");
  assert.equal(end.inFlight, 0);
}

test("WH-15 no starvation: with no endpoint limit in the way, every backlogged tenant is served within Σ weights picks", () => {
  const { s } = scheduler({ weightOf: (t) => WEIGHTS[Number(t)]! });
  const round = WEIGHTS.reduce((a, b) => a + b, 0);
  // Enough that nobody runs dry within the 150 picks checked: a tenant with nothing queued waits for nothing.
  for (let t = 0; t < WEIGHTS.length; t++)
    for (let i = 0; i < 200; i++) s.enqueue({ tenantId: String(t), endpointId: `e${t}`, item: i });
  const since = new Map<string, number>();
  for (const lease of drainPicks(s, 150)) {
    for (let t = 0; t < WEIGHTS.length; t++) since.set(String(t), (since.get(String(t)) ?? 0) + 1);
    since.set(lease.tenantId, 0);
    for (const [tenant, picks] of since) assert.ok(picks <= round, `tenant ${tenant} waited ${picks} picks`);
  }
});
