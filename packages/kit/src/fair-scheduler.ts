/**
 * Weighted fair scheduling of tasks across flows (the webhooks' WH-15, WH-21): no flow and
 * no queue can occupy a global FIFO. A *flow* is the unit of fairness (a tenant, an
 * account); a *queue* belongs to one flow and is the unit of concurrency and rate limits
 * (an endpoint, a downstream). Two levels:
 *
 * - across flows, weighted deficit round robin (Shreedhar & Varghese): each turn a flow
 *   earns `weight × quantum` credits and spends one per task, so over any busy period
 *   flows get tasks in proportion to their weights, and a flow that becomes active waits
 *   at most one round (Σ weights × quantum tasks) for its turn;
 * - inside a flow, round robin over its queues, each with a concurrency limit and a
 *   token-bucket rate limit, so one slow or failing queue holds at most its own
 *   `maxInFlight` workers (convoy#1926: one slow endpoint clogged every worker) and the
 *   flow's other queues keep moving.
 *
 * Only queues that can go now sit in the rings: one at its concurrency limit waits for
 * `complete()`, one out of tokens or throttled (Retry-After) is parked in a heap until its
 * time. A pick therefore touches O(1) entries amortised, plus O(log n) heap work, and
 * never spins over flows that cannot go. Everything is bounded: past a bound `enqueue`
 * refuses (SCHEDULER_QUEUE_FULL naming the `scope` it hit, or the owner's own error via
 * `refuse`) and the caller keeps the task in durable storage for later (the store is the
 * queue of record; this is a window onto it). Time is the clock's monotonic time.
 *
 * @example
 * const scheduler = new FairScheduler<Delivery>({ clock, maxQueuedTotal: 10_000, maxQueuedPerFlow: 2_000 });
 * scheduler.enqueue({ flowId: "tenant-1", queueId: "sub_1", item: delivery });
 * const lease = scheduler.pick();       // undefined when nothing may go now
 * if (lease) { await send(lease.item); scheduler.complete(lease); }
 * // nothing to pick: sleep until scheduler.nextReadyAtMs() or new work, whichever first
 */
import { assert } from "./assert.ts";
import type { Clock } from "./clock.ts";
import { Deque } from "./deque.ts";
import { kitErrors } from "./kit-errors.ts";
import { MinHeap } from "./min-heap.ts";
import { TokenBucket } from "./token-bucket.ts";

export interface QueueLimits {
  /** Tasks in flight at once from this queue. */
  maxInFlight: number;
  /** Sustained tasks per second. */
  ratePerS: number;
  /** Tasks allowed back to back. */
  burst: number;
}

export const DEFAULT_QUEUE_LIMITS: Readonly<QueueLimits> = Object.freeze({
  maxInFlight: 4,
  ratePerS: 50,
  burst: 10,
});
/** Largest flow weight: bounds a round to Σ weights × quantum tasks. */
export const MAX_WEIGHT = 1_000;
/** Queue states remembered at once (queued, in flight, or holding a throttle or a bucket). */
export const DEFAULT_MAX_QUEUES = 100_000;
/** Idle queue states examined per sweep when the queue bound is reached. */
const MAX_SWEEP = 256;

export interface FairSchedulerOptions {
  clock: Clock;
  /** Tasks queued across all flows. */
  maxQueuedTotal: number;
  /** Tasks queued by one flow: a flood fills its own queue, not everyone's. */
  maxQueuedPerFlow: number;
  /** Tasks in flight for one flow across its queues. Default: no flow bound. */
  maxInFlightPerFlow?: number;
  /** Queue states remembered at once. Default DEFAULT_MAX_QUEUES. */
  maxQueues?: number;
  /** Credits per unit of weight per turn. Default 1. */
  quantum?: number;
  /** A flow's weight, in [1, MAX_WEIGHT]. Default 1 for everyone. */
  weightOf?: (flowId: string) => number;
  /** A queue's limits, read when it is first seen. */
  limitsOf?: (queueId: string) => QueueLimits;
  /** The error `enqueue` throws past a bound. Default: kit's SCHEDULER_QUEUE_FULL with the refusal as fields. */
  refuse?: (refusal: Refusal) => Error;
}

/** Which bound refused a task: tasks queued in all, in one flow, or queue states remembered. */
export interface Refusal {
  readonly scope: "total" | "flow" | "queues";
  readonly limit: number;
  /** The flow at fault, for scope "flow". */
  readonly flowId?: string;
}

export interface ScheduledTask<T> {
  flowId: string;
  /** The unit of concurrency and rate limits; belongs to one flow for as long as it is remembered. */
  queueId: string;
  item: T;
}

/** A picked task; give it back with `complete` when its work ends, whatever the result. */
export interface Lease<T> {
  readonly flowId: string;
  readonly queueId: string;
  readonly item: T;
  readonly enqueuedAtMs: number;
  readonly pickedAtMs: number;
}

interface Entry<T> {
  item: T;
  enqueuedAtMs: number;
}

type QueueStatus = "idle" | "ready" | "parked" | "blocked";

interface QueueState<T> {
  readonly id: string;
  readonly flow: FlowState<T>;
  readonly tasks: Deque<Entry<T>>;
  readonly limits: QueueLimits;
  readonly bucket: TokenBucket;
  inFlight: number;
  throttledUntilMs: number;
  status: QueueStatus;
}

interface FlowState<T> {
  readonly id: string;
  readonly weight: number;
  readonly ready: Deque<QueueState<T>>;
  readonly queues: Set<string>;
  deficit: number;
  queued: number;
  inFlight: number;
  active: boolean;
}

interface LeaseRecord<T> extends Lease<T> {
  done: boolean;
}

export class FairScheduler<T> {
  readonly #clock: Clock;
  readonly #maxQueuedTotal: number;
  readonly #maxQueuedPerFlow: number;
  readonly #maxInFlightPerFlow: number;
  readonly #maxQueues: number;
  readonly #quantum: number;
  readonly #weightOf: (flowId: string) => number;
  readonly #limitsOf: (queueId: string) => QueueLimits;
  readonly #refuse: (refusal: Refusal) => Error;
  readonly #flows = new Map<string, FlowState<T>>();
  readonly #queues = new Map<string, QueueState<T>>();
  readonly #idle = new Set<QueueState<T>>();
  readonly #active = new Deque<FlowState<T>>();
  readonly #parked = new MinHeap<QueueState<T>>();
  #queued = 0;
  #inFlight = 0;

  constructor(options: FairSchedulerOptions) {
    requireCount("maxQueuedTotal", options.maxQueuedTotal);
    requireCount("maxQueuedPerFlow", options.maxQueuedPerFlow);
    this.#maxInFlightPerFlow = options.maxInFlightPerFlow ?? Number.POSITIVE_INFINITY;
    if (!(this.#maxInFlightPerFlow >= 1)) throw new RangeError("maxInFlightPerFlow must be >= 1");
    this.#maxQueues = options.maxQueues ?? DEFAULT_MAX_QUEUES;
    requireCount("maxQueues", this.#maxQueues);
    this.#quantum = options.quantum ?? 1;
    if (!(this.#quantum >= 1 && this.#quantum <= MAX_WEIGHT)) throw new RangeError("quantum must be 1..1000");
    this.#clock = options.clock;
    this.#maxQueuedTotal = options.maxQueuedTotal;
    this.#maxQueuedPerFlow = options.maxQueuedPerFlow;
    this.#weightOf = options.weightOf ?? (() => 1);
    this.#limitsOf = options.limitsOf ?? (() => DEFAULT_QUEUE_LIMITS);
    this.#refuse = options.refuse ?? queueFull;
  }

  /** Queues a task, or throws (see `refuse`) naming the bound (`scope`) it hit; a refused task leaves no state. */
  enqueue(task: ScheduledTask<T>): void {
    if (this.#queued >= this.#maxQueuedTotal)
      throw this.#refuse({ scope: "total", limit: this.#maxQueuedTotal });
    const known = this.#flows.get(task.flowId);
    if (known !== undefined && known.queued >= this.#maxQueuedPerFlow) {
      throw this.#refuse({ scope: "flow", limit: this.#maxQueuedPerFlow, flowId: task.flowId });
    }
    const nowMs = this.#clock.monotonicMs();
    const queue = this.#queue(task.flowId, task.queueId, nowMs);
    queue.tasks.push({ item: task.item, enqueuedAtMs: nowMs });
    queue.flow.queued += 1;
    this.#queued += 1;
    if (queue.status === "idle") {
      this.#idle.delete(queue);
      this.#makeEligible(queue, nowMs);
    }
  }

  /** The next task by the fairness rules, or undefined when nothing may go now. */
  pick(): Lease<T> | undefined {
    const nowMs = this.#clock.monotonicMs();
    this.#unpark(nowMs);
    // Each turn serves (weight × quantum >= 1 gives the head flow a credit) or retires a
    // flow with nothing that may go now, so one pass over the ring always suffices.
    for (let turns = this.#active.length + 1; turns > 0 && this.#active.length > 0; turns--) {
      const flow = this.#active.peek()!;
      if (flow.deficit < 1) flow.deficit += flow.weight * this.#quantum;
      const queue = this.#readyQueue(flow, nowMs);
      if (queue === undefined) {
        this.#retire(flow);
        continue;
      }
      const lease = this.#take(queue, nowMs);
      // A flow that spent its credits goes to the back; #take already retired one with nothing left.
      if (flow.active && flow.deficit < 1) this.#active.push(this.#active.shift()!);
      return lease;
    }
    return undefined;
  }

  /** Ends a picked task's work: frees its queue and flow slots. Exactly once per lease. */
  complete(lease: Lease<T>): void {
    const record = lease as LeaseRecord<T>;
    if (record.done !== false)
      throw new RangeError("complete() called twice, or with a lease not from pick()");
    record.done = true;
    const queue = this.#queues.get(lease.queueId);
    assert(queue !== undefined, "a queue with a task in flight is remembered", { queueId: lease.queueId });
    const flow = queue.flow;
    queue.inFlight -= 1;
    flow.inFlight -= 1;
    this.#inFlight -= 1;
    assert(queue.inFlight >= 0 && flow.inFlight >= 0, "in-flight counts never go below zero");
    const nowMs = this.#clock.monotonicMs();
    if (queue.status === "blocked") this.#makeEligible(queue, nowMs);
    else if (queue.status === "idle") this.#settleIdle(queue, nowMs);
    this.#activate(flow);
  }

  /**
   * Holds every task of `queueId` until `untilMs` (monotonic): its downstream
   * answered 429/503 with Retry-After. Call it before `complete`; false if the queue is unknown.
   */
  throttle(queueId: string, untilMs: number): boolean {
    const queue = this.#queues.get(queueId);
    if (queue === undefined) return false;
    queue.throttledUntilMs = Math.max(queue.throttledUntilMs, untilMs);
    return true;
  }

  /** When a parked queue may go again, for a worker with nothing to pick to sleep until. */
  nextReadyAtMs(): number | undefined {
    return this.#parked.peekKey();
  }

  /** Totals, for metrics and invariant checks. */
  stats(): { queued: number; inFlight: number; flows: number; queues: number } {
    return {
      queued: this.#queued,
      inFlight: this.#inFlight,
      flows: this.#flows.size,
      queues: this.#queues.size,
    };
  }

  /** One flow's queued and in-flight counts (per-flow metrics; a tenant's share of a claim window). */
  flowStats(flowId: string): { queued: number; inFlight: number; weight: number } | undefined {
    const flow = this.#flows.get(flowId);
    return flow && { queued: flow.queued, inFlight: flow.inFlight, weight: flow.weight };
  }

  #queue(flowId: string, queueId: string, nowMs: number): QueueState<T> {
    const known = this.#queues.get(queueId);
    if (known !== undefined) {
      if (known.flow.id !== flowId) throw new RangeError(`queue ${queueId} belongs to another flow`);
      return known;
    }
    if (this.#queues.size >= this.#maxQueues) this.#sweepIdle(nowMs);
    if (this.#queues.size >= this.#maxQueues) throw this.#refuse({ scope: "queues", limit: this.#maxQueues });
    // Limits are validated before any state is created, so a bad one leaves nothing behind.
    const limits = this.#limitsOf(queueId);
    requireCount("maxInFlight", limits.maxInFlight);
    const bucket = new TokenBucket({ capacity: limits.burst, ratePerS: limits.ratePerS, nowMs });
    const flow = this.#flow(flowId);
    const queue: QueueState<T> = {
      id: queueId,
      flow,
      tasks: new Deque(),
      limits,
      bucket,
      inFlight: 0,
      throttledUntilMs: Number.NEGATIVE_INFINITY,
      status: "idle",
    };
    this.#queues.set(queueId, queue);
    flow.queues.add(queueId);
    return queue;
  }

  #flow(flowId: string): FlowState<T> {
    const known = this.#flows.get(flowId);
    if (known !== undefined) return known;
    const weight = this.#weightOf(flowId);
    if (!(weight >= 1 && weight <= MAX_WEIGHT)) {
      throw new RangeError(`weight of flow ${flowId} must be 1..${MAX_WEIGHT}, got ${weight}`);
    }
    const flow: FlowState<T> = {
      id: flowId,
      weight,
      ready: new Deque(),
      queues: new Set(),
      deficit: 0,
      queued: 0,
      inFlight: 0,
      active: false,
    };
    this.#flows.set(flowId, flow);
    return flow;
  }

  /** Puts a queue with queued tasks where it belongs: blocked, parked, or in its flow's ring. */
  #makeEligible(queue: QueueState<T>, nowMs: number): void {
    if (queue.tasks.length === 0) {
      queue.status = "idle";
      this.#settleIdle(queue, nowMs);
      return;
    }
    if (queue.inFlight >= queue.limits.maxInFlight) {
      queue.status = "blocked";
      return;
    }
    const readyAtMs = Math.max(queue.throttledUntilMs, queue.bucket.readyAtMs(nowMs));
    if (readyAtMs > nowMs) {
      queue.status = "parked";
      this.#parked.push(readyAtMs, queue);
      return;
    }
    queue.status = "ready";
    queue.flow.ready.push(queue);
    this.#activate(queue.flow);
  }

  #activate(flow: FlowState<T>): void {
    if (flow.active || flow.ready.length === 0 || flow.inFlight >= this.#maxInFlightPerFlow) return;
    flow.active = true;
    flow.deficit = 0;
    this.#active.push(flow);
  }

  /** Takes the flow at the head of the ring out of it (DRR: an idle flow keeps no credit). */
  #retire(flow: FlowState<T>): void {
    this.#active.shift();
    flow.active = false;
    flow.deficit = 0;
  }

  #unpark(nowMs: number): void {
    for (let key = this.#parked.peekKey(); key !== undefined && key <= nowMs; key = this.#parked.peekKey()) {
      const { value: queue } = this.#parked.pop()!;
      if (queue.status === "parked") this.#makeEligible(queue, nowMs);
    }
  }

  /** The first queue of the flow's ring that may go now; parks those that may not. */
  #readyQueue(flow: FlowState<T>, nowMs: number): QueueState<T> | undefined {
    for (let left = flow.ready.length; left > 0; left--) {
      const queue = flow.ready.shift()!;
      const readyAtMs =
        queue.throttledUntilMs > nowMs
          ? queue.throttledUntilMs
          : queue.bucket.tryTake(nowMs)
            ? nowMs
            : queue.bucket.readyAtMs(nowMs);
      if (readyAtMs <= nowMs) return queue;
      queue.status = "parked";
      this.#parked.push(readyAtMs, queue);
    }
    return undefined;
  }

  /** Dequeues one task of a queue that holds a token, and puts the queue back in place. */
  #take(queue: QueueState<T>, nowMs: number): Lease<T> {
    const flow = queue.flow;
    const entry = queue.tasks.shift()!;
    queue.inFlight += 1;
    flow.inFlight += 1;
    flow.queued -= 1;
    flow.deficit -= 1;
    this.#inFlight += 1;
    this.#queued -= 1;
    if (queue.tasks.length === 0) queue.status = "idle";
    else if (queue.inFlight >= queue.limits.maxInFlight) queue.status = "blocked";
    else flow.ready.push(queue); // round robin inside the flow: one task per queue turn
    if (flow.ready.length === 0 || flow.inFlight >= this.#maxInFlightPerFlow) this.#retire(flow);
    const lease: LeaseRecord<T> = {
      flowId: flow.id,
      queueId: queue.id,
      item: entry.item,
      enqueuedAtMs: entry.enqueuedAtMs,
      pickedAtMs: nowMs,
      done: false,
    };
    return lease;
  }

  /** A queue with nothing queued: forgotten once nothing about it is left to remember. */
  #settleIdle(queue: QueueState<T>, nowMs: number): void {
    if (queue.inFlight > 0) return;
    if (queue.throttledUntilMs > nowMs || !queue.bucket.isFull(nowMs)) {
      this.#idle.add(queue);
      return;
    }
    this.#forget(queue);
  }

  #forget(queue: QueueState<T>): void {
    this.#idle.delete(queue);
    this.#queues.delete(queue.id);
    const flow = queue.flow;
    flow.queues.delete(queue.id);
    if (flow.queues.size === 0 && !flow.active) this.#flows.delete(flow.id);
  }

  #sweepIdle(nowMs: number): void {
    let examined = 0;
    for (const queue of this.#idle) {
      if (++examined > MAX_SWEEP) return;
      if (queue.throttledUntilMs <= nowMs && queue.bucket.isFull(nowMs)) this.#forget(queue);
    }
  }
}

function requireCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
}

function queueFull(refusal: Refusal): Error {
  return kitErrors.create("SCHEDULER_QUEUE_FULL", { fields: { ...refusal } });
}
