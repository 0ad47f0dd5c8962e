/**
 * Fair scheduling of delivery attempts (WH-15, WH-21) in the webhooks' vocabulary: kit's
 * weighted fair scheduler (`@casebook/kit/fair-scheduler`, DRR across flows, per-queue
 * concurrency and rate limits, bounded queues) with tenants as its flows and endpoints
 * (subscriptions) as its queues. This file only renames: a tenant earns `weight ×
 * quantum` credits a turn, an endpoint holds at most its own `maxInFlight` attempts
 * (convoy#1926), and a bound refuses with WEBHOOK_QUEUE_FULL naming its `scope`
 * ("total", "tenant", "endpoints") so the delivery stays in the store for later.
 *
 * @example
 * const scheduler = new FairScheduler<Delivery>({ clock, maxQueuedTotal: 10_000, maxQueuedPerTenant: 2_000 });
 * scheduler.enqueue({ tenantId: "t1", endpointId: "sub_1", item: delivery });
 * const lease = scheduler.pick();       // undefined when nothing can go now
 * if (lease) { await send(lease.item); scheduler.complete(lease); }
 */
import type { Clock } from "@casebook/kit/clock";
import {
  DEFAULT_MAX_QUEUES,
  DEFAULT_QUEUE_LIMITS,
  type Lease as FlowLease,
  FairScheduler as FlowScheduler,
  type QueueLimits,
  type Refusal,
} from "@casebook/kit/fair-scheduler";
import { deliveryErrors } from "../errors.ts";

export { MAX_WEIGHT } from "@casebook/kit/fair-scheduler";

/** An endpoint's limits: attempts in flight at once, sustained attempts per second, burst. */
export type EndpointLimits = QueueLimits;
export const DEFAULT_ENDPOINT_LIMITS: Readonly<EndpointLimits> = DEFAULT_QUEUE_LIMITS;
/** Endpoint states remembered at once (queued, in flight, or holding a throttle or a bucket). */
export const DEFAULT_MAX_ENDPOINTS = DEFAULT_MAX_QUEUES;

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
  /** A tenant's weight, in [1, MAX_WEIGHT]. Default 1 for everyone. */
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

/** Kit's lease under webhook names; keeps the kit lease for `complete`. */
class TenantLease<T> implements Lease<T> {
  readonly tenantId: string;
  readonly endpointId: string;
  readonly item: T;
  readonly enqueuedAtMs: number;
  readonly pickedAtMs: number;
  readonly #inner: FlowLease<T>;

  constructor(inner: FlowLease<T>) {
    this.tenantId = inner.flowId;
    this.endpointId = inner.queueId;
    this.item = inner.item;
    this.enqueuedAtMs = inner.enqueuedAtMs;
    this.pickedAtMs = inner.pickedAtMs;
    this.#inner = inner;
  }

  /** The kit lease behind `lease`, or undefined for a lease that did not come from pick(). */
  static innerOf(lease: object): FlowLease<unknown> | undefined {
    return #inner in lease ? (lease as TenantLease<unknown>).#inner : undefined;
  }
}

const SCOPES: Readonly<Record<Refusal["scope"], string>> = {
  total: "total",
  flow: "tenant",
  queues: "endpoints",
};

function queueFull(refusal: Refusal): Error {
  const fields = { scope: SCOPES[refusal.scope], limit: refusal.limit, tenantId: refusal.flowId };
  return deliveryErrors.create("WEBHOOK_QUEUE_FULL", { fields });
}

export class FairScheduler<T> {
  readonly #flows: FlowScheduler<T>;

  constructor(options: FairSchedulerOptions) {
    this.#flows = new FlowScheduler<T>({
      clock: options.clock,
      maxQueuedTotal: options.maxQueuedTotal,
      maxQueuedPerFlow: options.maxQueuedPerTenant,
      ...(options.maxInFlightPerTenant === undefined
        ? {}
        : { maxInFlightPerFlow: options.maxInFlightPerTenant }),
      ...(options.maxEndpoints === undefined ? {} : { maxQueues: options.maxEndpoints }),
      ...(options.quantum === undefined ? {} : { quantum: options.quantum }),
      ...(options.weightOf === undefined ? {} : { weightOf: options.weightOf }),
      ...(options.limitsOf === undefined ? {} : { limitsOf: options.limitsOf }),
      refuse: queueFull,
    });
  }

  /** Queues a task, or throws WEBHOOK_QUEUE_FULL naming the bound (`scope`) it hit. */
  enqueue(task: ScheduledTask<T>): void {
    this.#flows.enqueue({ flowId: task.tenantId, queueId: task.endpointId, item: task.item });
  }

  /** The next task by the fairness rules, or undefined when nothing may be sent now. */
  pick(): Lease<T> | undefined {
    const lease = this.#flows.pick();
    return lease && new TenantLease(lease);
  }

  /** Ends a picked task's attempt: frees its endpoint and tenant slots. Exactly once per lease. */
  complete(lease: Lease<T>): void {
    const inner = TenantLease.innerOf(lease);
    if (inner === undefined) throw new RangeError("complete() called with a lease not from pick()");
    this.#flows.complete(inner as FlowLease<T>);
  }

  /**
   * Holds every task of `endpointId` until `untilMs` (monotonic): the endpoint answered
   * 429/503 with Retry-After. Call it before `complete`; false if the endpoint is unknown.
   */
  throttle(endpointId: string, untilMs: number): boolean {
    return this.#flows.throttle(endpointId, untilMs);
  }

  /** When a parked endpoint becomes sendable, for a worker with nothing to pick to sleep until. */
  nextReadyAtMs(): number | undefined {
    return this.#flows.nextReadyAtMs();
  }

  /** Totals, for metrics and invariant checks. */
  stats(): { queued: number; inFlight: number; tenants: number; endpoints: number } {
    const { queued, inFlight, flows, queues } = this.#flows.stats();
    return { queued, inFlight, tenants: flows, endpoints: queues };
  }

  /** One tenant's queued and in-flight counts (WH-15 per-tenant metrics). */
  tenantStats(tenantId: string): { queued: number; inFlight: number; weight: number } | undefined {
    return this.#flows.flowStats(tenantId);
  }
}
