/**
 * The generic structure only: flows with weights, queues with limits, bounded refusal.
 * The webhooks' claims about it (WH-15, WH-21: tenants, endpoints, the floods) are proved
 * in systems/webhooks/test/fair-scheduler*.test.ts through its tenant/endpoint file.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ManualClock } from "../src/clock.ts";
import {
  FairScheduler,
  type FairSchedulerOptions,
  type Lease,
  type QueueLimits,
} from "../src/fair-scheduler.ts";
import { kitErrors } from "../src/kit-errors.ts";

const UNLIMITED: QueueLimits = { maxInFlight: 1_000_000, ratePerS: 1e9, burst: 1e9 };

function scheduler(options: Partial<FairSchedulerOptions> = {}) {
  const clock = new ManualClock(0);
  const s = new FairScheduler<number>({
    clock,
    maxQueuedTotal: 10_000,
    maxQueuedPerFlow: 5_000,
    limitsOf: () => UNLIMITED,
    ...options,
  });
  return { clock, s };
}

function drain(s: FairScheduler<number>, n: number): Lease<number>[] {
  const leases: Lease<number>[] = [];
  while (leases.length < n) {
    const lease = s.pick();
    if (lease === undefined) break;
    leases.push(lease);
    s.complete(lease);
  }
  return leases;
}

test("flows share picks in proportion to their weights (times the quantum) while backlogged", () => {
  const { s } = scheduler({ weightOf: (flow) => (flow === "a" ? 2 : 1), quantum: 2 });
  for (let i = 0; i < 100; i++) {
    s.enqueue({ flowId: "a", queueId: "qa", item: i });
    s.enqueue({ flowId: "b", queueId: "qb", item: i });
  }
  const flows = drain(s, 12).map((l) => l.flowId);
  assert.deepEqual(flows, ["a", "a", "a", "a", "b", "b", "a", "a", "a", "a", "b", "b"]);
  assert.deepEqual(s.flowStats("a"), { queued: 92, inFlight: 0, weight: 2 });
});

test("maxInFlightPerFlow holds a flow's picks until one completes; the other flows go on", () => {
  const { s } = scheduler({ maxInFlightPerFlow: 2 });
  for (let i = 0; i < 5; i++) {
    s.enqueue({ flowId: "a", queueId: `a${i}`, item: i });
    s.enqueue({ flowId: "b", queueId: `b${i}`, item: i });
  }
  const held: Lease<number>[] = [];
  for (let lease = s.pick(); lease !== undefined; lease = s.pick()) held.push(lease);
  assert.deepEqual(
    held.map((l) => l.flowId),
    ["a", "b", "a", "b"],
  );
  s.complete(held[0]!);
  assert.equal(s.pick()?.flowId, "a");
  assert.equal(s.pick(), undefined);
});

test("bounds refuse with SCHEDULER_QUEUE_FULL by default, or with the owner's error; a refusal leaves no state", () => {
  const { s } = scheduler({ maxQueuedTotal: 3, maxQueuedPerFlow: 2, maxQueues: 2 });
  s.enqueue({ flowId: "a", queueId: "q1", item: 0 });
  s.enqueue({ flowId: "a", queueId: "q1", item: 1 });
  const refused = (scope: string) => (e: unknown) =>
    kitErrors.is(e, "SCHEDULER_QUEUE_FULL") && e.fields.scope === scope && e.status === 503;
  assert.throws(() => s.enqueue({ flowId: "a", queueId: "q1", item: 2 }), refused("flow"));
  s.enqueue({ flowId: "b", queueId: "q2", item: 0 });
  assert.throws(() => s.enqueue({ flowId: "c", queueId: "q3", item: 0 }), refused("total"));
  drain(s, 1);
  assert.throws(() => s.enqueue({ flowId: "c", queueId: "q3", item: 0 }), refused("queues"));
  assert.equal(s.stats().flows, 2, "the refused flow was never created");

  const own = scheduler({ maxQueuedTotal: 1, refuse: (r) => new Error(`full: ${r.scope}/${r.limit}`) }).s;
  own.enqueue({ flowId: "a", queueId: "q", item: 0 });
  assert.throws(() => own.enqueue({ flowId: "a", queueId: "q", item: 1 }), /full: total\/1/);
});

test("a throttled queue is parked until its time; nextReadyAtMs says when", () => {
  const { clock, s } = scheduler();
  s.enqueue({ flowId: "a", queueId: "q", item: 0 });
  s.enqueue({ flowId: "a", queueId: "q", item: 1 });
  const first = s.pick()!;
  assert.ok(s.throttle("q", 500));
  s.complete(first);
  assert.equal(s.pick(), undefined);
  assert.equal(s.nextReadyAtMs(), 500);
  clock.advance(500);
  assert.equal(s.pick()?.item, 1);
  assert.equal(s.throttle("unknown", 1), false);
});

test("a lease completes once; a queue belongs to one flow", () => {
  const { s } = scheduler();
  s.enqueue({ flowId: "a", queueId: "q", item: 0 });
  const lease = s.pick()!;
  s.complete(lease);
  assert.throws(() => s.complete(lease), RangeError);
  s.enqueue({ flowId: "a", queueId: "q2", item: 0 });
  assert.throws(() => s.enqueue({ flowId: "b", queueId: "q2", item: 0 }), RangeError);
});

test("property: queue and flow concurrency bounds hold in any interleaving, and every task is eventually picked", () => {
  const LIMITS: QueueLimits = { maxInFlight: 2, ratePerS: 10, burst: 2 };
  type Op =
    | { kind: "enqueue"; flow: number; queue: number }
    | { kind: "pick" }
    | { kind: "complete"; index: number }
    | { kind: "advance"; ms: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({
      kind: fc.constant("enqueue" as const),
      flow: fc.integer({ min: 0, max: 2 }),
      queue: fc.integer({ min: 0, max: 2 }),
    }),
    fc.record({ kind: fc.constant("pick" as const) }),
    fc.record({ kind: fc.constant("complete" as const), index: fc.nat() }),
    fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 300 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const { clock, s } = scheduler({
        maxQueuedTotal: 30,
        maxQueuedPerFlow: 12,
        maxInFlightPerFlow: 3,
        limitsOf: () => LIMITS,
      });
      const held: Lease<number>[] = [];
      const count = (key: (l: Lease<number>) => string, value: string) =>
        held.filter((l) => key(l) === value).length;
      for (const o of ops) {
        if (o.kind === "enqueue") {
          try {
            s.enqueue({ flowId: `f${o.flow}`, queueId: `f${o.flow}-q${o.queue}`, item: 0 });
          } catch (error) {
            assert.ok(kitErrors.is(error, "SCHEDULER_QUEUE_FULL"));
          }
        } else if (o.kind === "pick") {
          const lease = s.pick();
          if (lease === undefined) continue;
          held.push(lease);
          assert.ok(count((l) => l.queueId, lease.queueId) <= LIMITS.maxInFlight, "per-queue concurrency");
          assert.ok(count((l) => l.flowId, lease.flowId) <= 3, "per-flow concurrency");
        } else if (o.kind === "complete" && held.length > 0) {
          s.complete(held.splice(o.index % held.length, 1)[0]!);
        } else if (o.kind === "advance") clock.advance(o.ms);
        assert.equal(s.stats().inFlight, held.length);
        assert.ok(s.stats().queued <= 30);
      }
      for (const lease of held) s.complete(lease);
      for (let round = 0; round < 100 && s.stats().queued > 0; round++) {
        clock.advance(1_000);
        drain(s, 1_000);
      }
      assert.equal(s.stats().queued, 0, "every task picked");
    }),
    { numRuns: 150 },
  );
});
