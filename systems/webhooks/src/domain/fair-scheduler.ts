/**
 * Fair scheduling of delivery attempts (WH-15, WH-21): no tenant and no endpoint can
 * occupy a global FIFO. Two levels:
 *
 * - across tenants, weighted deficit round robin (Shreedhar & Varghese): each turn a
 *   tenant earns `weight × quantum` credits and spends one per attempt, so over any
 *   busy period tenants get attempts in proportion to their weights, and a tenant that
 *   becomes active waits at most one round (Σ weights × quantum attempts) for its turn;
 * - inside a tenant, round robin over its endpoints, each with a concurrency limit and
 *   a token-bucket rate limit, so one slow or failing endpoint holds at most its own
 *   `maxInFlight` workers (convoy#1926) and the tenant's other endpoints keep moving.
 *
 * Only endpoints that can send now sit in the rings: one at its concurrency limit waits
 * for `complete()`, one out of tokens or throttled by Retry-After is parked in a heap
 * until its time. A pick therefore touches O(1) entries amortised, plus O(log n) heap
 * work, and never spins over tenants that cannot send. Queues are bounded: past a
 * bound `enqueue` refuses with WEBHOOK_QUEUE_FULL and the caller leaves the delivery in
 * durable storage for later (the store is the queue of record; this is a window onto it).
 *
 * @example
 * const scheduler = new FairScheduler<Delivery>({ clock, maxQueuedTotal: 10_000, maxQueuedPerTenant: 2_000 });
 * scheduler.enqueue({ tenantId: "t1", endpointId: "sub_1", item: delivery });
 * const lease = scheduler.pick();       // undefined when nothing can go now
 * if (lease) { await send(lease.item); scheduler.complete(lease); }
 */
import type { Clock } from "@casebook/kit/clock";
import { TokenBucket } from "@casebook/kit/token-bucket";
import { deliveryErrors } from "./delivery-errors.ts";
import { MinHeap } from "./min-heap.ts";
import { RingDeque } from "./ring-deque.ts";

export interface EndpointLimits {
  /** Attempts in flight at once to this endpoint. */
  maxInFlight: number;
  /** Sustained attempts per second. */
  ratePerS: number;
  /** Attempts allowed back to back. */
  burst: number;
}

export const ENDPOINT_LIMITS_DEFAULT: Readonly<EndpointLimits> = Object.freeze({
  maxInFlight: 4,
  ratePerS: 50,
  burst: 10,
});
/** Largest tenant weight: bounds a round to Σ weights × quantum attempts. */
export const WEIGHT_MAX = 1_000;
/** Endpoint states remembered at once (queued, in flight, or holding a throttle or a bucket). */
export const ENDPOINTS_MAX_DEFAULT = 100_000;
/** Idle endpoint states examined per sweep when the endpoint bound is reached. */
const SWEEP_MAX = 256;

export interface FairSchedulerOptions {
  clock: Clock;
  /** Tasks queued across all tenants. */
  maxQueuedTotal: number;
  /** Tasks queued by one tenant: a flood fills its own queue, not everyone's. */
  maxQueuedPerTenant: number;
  /** Attempts in flight for one tenant across its endpoints. Default: no tenant bound. */
  maxInFlightPerTenant?: number;
  maxEndpoints?: number;
  /** Credits per unit of weight per turn. Default 1. */
  quantum?: number;
  /** A tenant's weight, in [1, WEIGHT_MAX]. Default 1 for everyone. */
  weightOf?: (tenantId: string) => number;
  /** An endpoint's limits, read when it is first seen. */
  limitsOf?: (endpointId: string) => EndpointLimits;
}

export interface ScheduledTask<T> {
  tenantId: string;
  /** The subscription: the unit of concurrency and rate limits. */
  endpointId: string;
  item: T;
}

/** A picked task; give it back with `complete` when its attempt ends, whatever the result. */
export interface Lease<T> {
  readonly tenantId: string;
  readonly endpointId: string;
  readonly item: T;
  readonly enqueuedAtMs: number;
  readonly pickedAtMs: number;
}

interface Entry<T> {
  item: T;
  enqueuedAtMs: number;
}

type EndpointStatus = "idle" | "ready" | "parked" | "blocked";

interface EndpointState<T> {
  readonly id: string;
  readonly tenant: TenantState<T>;
  readonly queue: RingDeque<Entry<T>>;
  readonly limits: EndpointLimits;
  readonly bucket: TokenBucket;
  inFlight: number;
  throttledUntilMs: number;
  status: EndpointStatus;
}

interface TenantState<T> {
  readonly id: string;
  readonly weight: number;
  readonly ready: RingDeque<EndpointState<T>>;
  readonly endpoints: Set<string>;
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
  readonly #maxQueuedPerTenant: number;
  readonly #maxInFlightPerTenant: number;
  readonly #maxEndpoints: number;
  readonly #quantum: number;
  readonly #weightOf: (tenantId: string) => number;
  readonly #limitsOf: (endpointId: string) => EndpointLimits;
  readonly #tenants = new Map<string, TenantState<T>>();
  readonly #endpoints = new Map<string, EndpointState<T>>();
  readonly #idle = new Set<EndpointState<T>>();
  readonly #active = new RingDeque<TenantState<T>>();
  readonly #parked = new MinHeap<EndpointState<T>>();
  #queued = 0;
  #inFlight = 0;

  constructor(options: FairSchedulerOptions) {
    requireCount("maxQueuedTotal", options.maxQueuedTotal);
    requireCount("maxQueuedPerTenant", options.maxQueuedPerTenant);
    this.#maxInFlightPerTenant = options.maxInFlightPerTenant ?? Number.POSITIVE_INFINITY;
    if (!(this.#maxInFlightPerTenant >= 1)) throw new RangeError("maxInFlightPerTenant must be >= 1");
    this.#maxEndpoints = options.maxEndpoints ?? ENDPOINTS_MAX_DEFAULT;
    requireCount("maxEndpoints", this.#maxEndpoints);
    this.#quantum = options.quantum ?? 1;
    if (!(this.#quantum >= 1 && this.#quantum <= WEIGHT_MAX)) throw new RangeError("quantum must be 1..1000");
    this.#clock = options.clock;
    this.#maxQueuedTotal = options.maxQueuedTotal;
    this.#maxQueuedPerTenant = options.maxQueuedPerTenant;
    this.#weightOf = options.weightOf ?? (() => 1);
    this.#limitsOf = options.limitsOf ?? (() => ENDPOINT_LIMITS_DEFAULT);
  }

  /** Queues a task, or throws WEBHOOK_QUEUE_FULL naming the bound (`scope`) it hit. */
  enqueue(task: ScheduledTask<T>): void {
    if (this.#queued >= this.#maxQueuedTotal) throw queueFull("total", this.#maxQueuedTotal);
    const known = this.#tenants.get(task.tenantId);
    if (known !== undefined && known.queued >= this.#maxQueuedPerTenant) {
      throw queueFull("tenant", this.#maxQueuedPerTenant, task.tenantId);
    }
    const nowMs = this.#clock.monotonicMs();
    const endpoint = this.#endpoint(task.tenantId, task.endpointId, nowMs);
    endpoint.queue.push({ item: task.item, enqueuedAtMs: nowMs });
    endpoint.tenant.queued += 1;
    this.#queued += 1;
    if (endpoint.status === "idle") {
      this.#idle.delete(endpoint);
      this.#makeEligible(endpoint, nowMs);
    }
  }

  /** The next task by the fairness rules, or undefined when nothing may be sent now. */
  pick(): Lease<T> | undefined {
    const nowMs = this.#clock.monotonicMs();
    this.#unpark(nowMs);
    // Each turn serves (weight × quantum >= 1 gives the head tenant a credit) or retires a
    // tenant with nothing sendable now, so one pass over the ring always suffices.
    for (let turns = this.#active.length + 1; turns > 0 && this.#active.length > 0; turns--) {
      const tenant = this.#active.peek()!;
      if (tenant.deficit < 1) tenant.deficit += tenant.weight * this.#quantum;
      const endpoint = this.#sendableEndpoint(tenant, nowMs);
      if (endpoint === undefined) {
        this.#retire(tenant);
        continue;
      }
      const lease = this.#take(endpoint, nowMs);
      // A tenant that spent its credits goes to the back; #take already retired one with nothing left.
      if (tenant.active && tenant.deficit < 1) this.#active.push(this.#active.shift()!);
      return lease;
    }
    return undefined;
  }

  /** Ends a picked task's attempt: frees its endpoint and tenant slots. Exactly once per lease. */
  complete(lease: Lease<T>): void {
    const record = lease as LeaseRecord<T>;
    if (record.done !== false)
      throw new RangeError("complete() called twice, or with a lease not from pick()");
    record.done = true;
    const endpoint = this.#endpoints.get(lease.endpointId)!;
    const tenant = endpoint.tenant;
    endpoint.inFlight -= 1;
    tenant.inFlight -= 1;
    this.#inFlight -= 1;
    const nowMs = this.#clock.monotonicMs();
    if (endpoint.status === "blocked") this.#makeEligible(endpoint, nowMs);
    else if (endpoint.status === "idle") this.#settleIdle(endpoint, nowMs);
    this.#activate(tenant);
  }

  /**
   * Holds every task of `endpointId` until `untilMs` (monotonic): the endpoint answered
   * 429/503 with Retry-After. Call it before `complete`; false if the endpoint is unknown.
   */
  throttle(endpointId: string, untilMs: number): boolean {
    const endpoint = this.#endpoints.get(endpointId);
    if (endpoint === undefined) return false;
    endpoint.throttledUntilMs = Math.max(endpoint.throttledUntilMs, untilMs);
    return true;
  }

  /** When a parked endpoint becomes sendable, for a worker with nothing to pick to sleep until. */
  nextReadyAtMs(): number | undefined {
    return this.#parked.peekKey();
  }

  /** Totals, for metrics and invariant checks. */
  stats(): { queued: number; inFlight: number; tenants: number; endpoints: number } {
    return {
      queued: this.#queued,
      inFlight: this.#inFlight,
      tenants: this.#tenants.size,
      endpoints: this.#endpoints.size,
    };
  }

  /** One tenant's queued and in-flight counts (WH-15 per-tenant metrics). */
  tenantStats(tenantId: string): { queued: number; inFlight: number; weight: number } | undefined {
    const tenant = this.#tenants.get(tenantId);
    return tenant && { queued: tenant.queued, inFlight: tenant.inFlight, weight: tenant.weight };
  }

  #endpoint(tenantId: string, endpointId: string, nowMs: number): EndpointState<T> {
    const known = this.#endpoints.get(endpointId);
    if (known !== undefined) {
      if (known.tenant.id !== tenantId)
        throw new RangeError(`endpoint ${endpointId} belongs to another tenant`);
      return known;
    }
    if (this.#endpoints.size >= this.#maxEndpoints) this.#sweepIdle(nowMs);
    if (this.#endpoints.size >= this.#maxEndpoints) throw queueFull("endpoints", this.#maxEndpoints);
    // Limits are validated before any state is created, so a bad one leaves nothing behind.
    const limits = this.#limitsOf(endpointId);
    requireCount("maxInFlight", limits.maxInFlight);
    const bucket = new TokenBucket({ capacity: limits.burst, ratePerS: limits.ratePerS, nowMs });
    const tenant = this.#tenant(tenantId);
    const endpoint: EndpointState<T> = {
      id: endpointId,
      tenant,
      queue: new RingDeque(),
      limits,
      bucket,
      inFlight: 0,
      throttledUntilMs: Number.NEGATIVE_INFINITY,
      status: "idle",
    };
    this.#endpoints.set(endpointId, endpoint);
    tenant.endpoints.add(endpointId);
    return endpoint;
  }

  #tenant(tenantId: string): TenantState<T> {
    const known = this.#tenants.get(tenantId);
    if (known !== undefined) return known;
    const weight = this.#weightOf(tenantId);
    if (!(weight >= 1 && weight <= WEIGHT_MAX)) {
      throw new RangeError(`weight of tenant ${tenantId} must be 1..${WEIGHT_MAX}, got ${weight}`);
    }
    const tenant: TenantState<T> = {
      id: tenantId,
      weight,
      ready: new RingDeque(),
      endpoints: new Set(),
      deficit: 0,
      queued: 0,
      inFlight: 0,
      active: false,
    };
    this.#tenants.set(tenantId, tenant);
    return tenant;
  }

  /** Puts an endpoint with queued tasks where it belongs: blocked, parked, or in its tenant's ring. */
  #makeEligible(endpoint: EndpointState<T>, nowMs: number): void {
    if (endpoint.queue.length === 0) {
      endpoint.status = "idle";
      this.#settleIdle(endpoint, nowMs);
      return;
    }
    if (endpoint.inFlight >= endpoint.limits.maxInFlight) {
      endpoint.status = "blocked";
      return;
    }
    const readyAtMs = Math.max(endpoint.throttledUntilMs, endpoint.bucket.readyAtMs(nowMs));
    if (readyAtMs > nowMs) {
      endpoint.status = "parked";
      this.#parked.push(readyAtMs, endpoint);
      return;
    }
    endpoint.status = "ready";
    endpoint.tenant.ready.push(endpoint);
    this.#activate(endpoint.tenant);
  }

  #activate(tenant: TenantState<T>): void {
    if (tenant.active || tenant.ready.length === 0 || tenant.inFlight >= this.#maxInFlightPerTenant) return;
    tenant.active = true;
    tenant.deficit = 0;
    this.#active.push(tenant);
  }

  /** Takes the tenant at the head of the ring out of it (DRR: an idle tenant keeps no credit). */
  #retire(tenant: TenantState<T>): void {
    this.#active.shift();
    tenant.active = false;
    tenant.deficit = 0;
  }

  #unpark(nowMs: number): void {
    for (let key = this.#parked.peekKey(); key !== undefined && key <= nowMs; key = this.#parked.peekKey()) {
      const { value: endpoint } = this.#parked.pop()!;
      if (endpoint.status === "parked") this.#makeEligible(endpoint, nowMs);
    }
  }

  /** The first endpoint of the tenant's ring that may send now; parks those that may not. */
  #sendableEndpoint(tenant: TenantState<T>, nowMs: number): EndpointState<T> | undefined {
    for (let left = tenant.ready.length; left > 0; left--) {
      const endpoint = tenant.ready.shift()!;
      const readyAtMs =
        endpoint.throttledUntilMs > nowMs
          ? endpoint.throttledUntilMs
          : endpoint.bucket.tryTake(nowMs)
            ? nowMs
            : endpoint.bucket.readyAtMs(nowMs);
      if (readyAtMs <= nowMs) return endpoint;
      endpoint.status = "parked";
      this.#parked.push(readyAtMs, endpoint);
    }
    return undefined;
  }

  /** Dequeues one task of an endpoint that holds a token, and puts the endpoint back in place. */
  #take(endpoint: EndpointState<T>, nowMs: number): Lease<T> {
    const tenant = endpoint.tenant;
    const entry = endpoint.queue.shift()!;
    endpoint.inFlight += 1;
    tenant.inFlight += 1;
    tenant.queued -= 1;
    tenant.deficit -= 1;
    this.#inFlight += 1;
    this.#queued -= 1;
    if (endpoint.queue.length === 0) endpoint.status = "idle";
    else if (endpoint.inFlight >= endpoint.limits.maxInFlight) endpoint.status = "blocked";
    else tenant.ready.push(endpoint); // round robin inside the tenant: one task per endpoint turn
    if (tenant.ready.length === 0 || tenant.inFlight >= this.#maxInFlightPerTenant) this.#retire(tenant);
    const lease: LeaseRecord<T> = {
      tenantId: tenant.id,
      endpointId: endpoint.id,
      item: entry.item,
      enqueuedAtMs: entry.enqueuedAtMs,
      pickedAtMs: nowMs,
      done: false,
    };
    return lease;
  }

  /** An endpoint with nothing queued: forgotten once nothing about it is left to remember. */
  #settleIdle(endpoint: EndpointState<T>, nowMs: number): void {
    if (endpoint.inFlight > 0) return;
    if (endpoint.throttledUntilMs > nowMs || !endpoint.bucket.isFull(nowMs)) {
      this.#idle.add(endpoint);
      return;
    }
    this.#forget(endpoint);
  }

  #forget(endpoint: EndpointState<T>): void {
    this.#idle.delete(endpoint);
    this.#endpoints.delete(endpoint.id);
    const tenant = endpoint.tenant;
    tenant.endpoints.delete(endpoint.id);
    if (tenant.endpoints.size === 0 && !tenant.active) this.#tenants.delete(tenant.id);
  }

  #sweepIdle(nowMs: number): void {
    let examined = 0;
    for (const endpoint of this.#idle) {
      if (++examined > SWEEP_MAX) return;
      if (endpoint.throttledUntilMs <= nowMs && endpoint.bucket.isFull(nowMs)) this.#forget(endpoint);
    }
  }
}

function requireCount(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1)
    throw new RangeError(`${name} must be an integer >= 1, got ${value}`);
}

function queueFull(scope: "total" | "tenant" | "endpoints", limit: number, tenantId?: string): Error {
  return deliveryErrors.create("WEBHOOK_QUEUE_FULL", { fields: { scope, limit, tenantId } });
}
