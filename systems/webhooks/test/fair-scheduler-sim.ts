/**
 * A discrete-event simulation of delivery workers on a virtual clock, for the fairness
 * tests (WH-15, WH-21): tasks arrive at set times, `workers` attempts run at once, each
 * takes its `serviceMs`, and a queue discipline — the fair scheduler or a global FIFO —
 * decides what runs next. Pure and seeded: the same inputs give the same waits.
 */
import { ManualClock } from "@casebook/kit/clock";
import { Deque } from "@casebook/kit/deque";
import { MinHeap } from "@casebook/kit/min-heap";
import type { RandomSource } from "@casebook/kit/random";
import type { Lease, ScheduledTask } from "../src/domain/fair-scheduler.ts";

export interface SimTask {
  tenantId: string;
  endpointId: string;
  arriveAtMs: number;
  /** How long the attempt occupies a worker (the endpoint's response time or a timeout). */
  serviceMs: number;
}

/** What the simulation needs of a queue discipline. */
export interface Discipline {
  enqueue(task: ScheduledTask<SimTask>): void;
  pick(): Lease<SimTask> | undefined;
  complete(lease: Lease<SimTask>): void;
  nextReadyAtMs(): number | undefined;
}

/** The strawman the text warns about: one FIFO for everyone, no per-endpoint limit. */
export class GlobalFifo implements Discipline {
  readonly #queue = new Deque<SimTask>();

  enqueue(task: ScheduledTask<SimTask>): void {
    this.#queue.push(task.item);
  }

  pick(): Lease<SimTask> | undefined {
    const item = this.#queue.shift();
    if (item === undefined) return undefined;
    const { tenantId, endpointId, arriveAtMs } = item;
    return { tenantId, endpointId, item, enqueuedAtMs: arriveAtMs, pickedAtMs: Number.NaN };
  }

  complete(): void {}

  nextReadyAtMs(): number | undefined {
    return undefined;
  }
}

export interface TenantTimes {
  /** Arrival → attempt start, per task. */
  waitsMs: number[];
  /** Arrival → attempt end: the text's commit→2xx latency. */
  latenciesMs: number[];
}

/** Most simulation steps: far above any scenario here, a guard against a stuck discipline. */
const MAX_STEPS = 10_000_000;

/**
 * Runs `tasks` (sorted by arrival) through `discipline` with `workers` workers; times per
 * group (the tenant unless `groupOf` says otherwise).
 */
export function simulate(
  tasks: readonly SimTask[],
  workers: number,
  discipline: (clock: ManualClock) => Discipline,
  groupOf: (task: SimTask) => string = (task) => task.tenantId,
): Map<string, TenantTimes> {
  const clock = new ManualClock(0);
  const queue = discipline(clock);
  const running = new MinHeap<Lease<SimTask>>();
  const times = new Map<string, TenantTimes>();
  const timesOf = (task: SimTask) => {
    const group = groupOf(task);
    if (!times.has(group)) times.set(group, { waitsMs: [], latenciesMs: [] });
    return times.get(group)!;
  };
  let next = 0;
  for (let step = 0; step < MAX_STEPS; step++) {
    const nowMs = clock.monotonicMs();
    for (let done = running.peekKey(); done !== undefined && done <= nowMs; done = running.peekKey()) {
      const lease = running.pop()!.value;
      queue.complete(lease);
      timesOf(lease.item).latenciesMs.push(nowMs - lease.item.arriveAtMs);
    }
    for (; next < tasks.length && tasks[next]!.arriveAtMs <= nowMs; next++) {
      const task = tasks[next]!;
      queue.enqueue({ tenantId: task.tenantId, endpointId: task.endpointId, item: task });
    }
    for (let lease = running.size < workers ? queue.pick() : undefined; lease; ) {
      timesOf(lease.item).waitsMs.push(nowMs - lease.item.arriveAtMs);
      running.push(nowMs + lease.item.serviceMs, lease);
      lease = running.size < workers ? queue.pick() : undefined;
    }
    const candidates = [tasks[next]?.arriveAtMs, running.peekKey()];
    if (running.size < workers) candidates.push(queue.nextReadyAtMs());
    const wakeMs = Math.min(...candidates.filter((ms): ms is number => ms !== undefined && ms > nowMs));
    if (!Number.isFinite(wakeMs)) return times;
    clock.advance(wakeMs - nowMs);
  }
  throw new Error(`simulation did not finish in ${MAX_STEPS} steps`);
}

/** Nearest-rank percentile (p in (0, 100]). */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) throw new RangeError("percentile of nothing");
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** A service time drawn uniformly from [minMs, maxMs], whole ms. */
export function serviceMs(random: RandomSource, minMs: number, maxMs: number): number {
  return minMs + Math.floor(random.next() * (maxMs - minMs + 1));
}
