/**
 * Open-loop HTTP load from processes of their own (http-open-loop-child.ts), never the bench's:
 * started once per bench run, each run shares the rate among them and merges their latency
 * histograms, so the p99 is of every request sent. Reports the rate asked and sent and the late
 * and dropped sends (a generator that fell behind says so instead of measuring itself).
 *
 * @example
 * const load = await startHttpOpenLoop({ processes: 2 });
 * const run = await load.run({ url, requests: [{ path: "/abc" }], okStatuses: [302], ratePerS: 5_000, durationMs: 5_000 });
 * run.p50Ms; run.p99Ms; run.late + run.dropped;
 * await load.close();
 */
import { Histogram } from "@casebook/kit/histogram";
import {
  type HttpLoadRequest,
  type HttpOpenLoopCommand,
  type HttpOpenLoopResult,
  httpOpenLoopChildEntry,
} from "./http-open-loop-child.ts";
import { type SpawnedChild, spawnChild } from "./spawn-child.ts";

export type { HttpLoadRequest } from "./http-open-loop-child.ts";

const DEFAULT_WARMUP_MS = 1_000;

export interface HttpOpenLoopRunOptions {
  readonly url: string;
  readonly requests: readonly HttpLoadRequest[];
  readonly okStatuses: readonly number[];
  /** The rate of all processes together. */
  readonly ratePerS: number;
  /** The whole run, warm-up included. */
  readonly durationMs: number;
  readonly warmupMs?: number;
  /**
   * A fixed pool of connections, all processes together (shared out as evenly as the rate; at
   * least one each), opened before the first send, as a balancer's pool in front of a server
   * would be: the server never holds more requests at once than this (sends beyond wait in the
   * generator, their wait counted). Default: none opened up front and up to 256 per process
   * opened as sends find none idle — a run's first 0.1 s then opens hundreds against a server
   * answering in milliseconds, and any stall of the server opens more.
   */
  readonly connections?: number;
}

/** One run's figures, all processes together. */
export interface HttpOpenLoopRun {
  readonly askedPerS: number;
  readonly sentPerS: number;
  readonly achievedRatePerS: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  readonly dropped: number;
  readonly late: number;
  /** Connections the run opened, every process together. */
  readonly connectionsOpened: number;
}

export interface HttpOpenLoop {
  run(options: HttpOpenLoopRunOptions): Promise<HttpOpenLoopRun>;
  close(): Promise<void>;
}

export async function startHttpOpenLoop(options: { processes: number }): Promise<HttpOpenLoop> {
  const children: SpawnedChild[] = [];
  try {
    for (let i = 0; i < options.processes; i++)
      children.push(await spawnChild(httpOpenLoopChildEntry, { ready: /"ready"/, lineTimeoutMs: 120_000 }));
  } catch (error) {
    await Promise.allSettled(children.map((c) => c.stop()));
    throw error;
  }
  return {
    async run(run) {
      const pool = run.connections;
      if (pool !== undefined && !(Number.isInteger(pool) && pool >= children.length))
        throw new RangeError(
          `connections must be an integer ≥ ${children.length} (one per process), got ${pool}`,
        );
      const results = await Promise.all(
        children.map(async (child, first) => {
          const command: HttpOpenLoopCommand = {
            cmd: "run",
            url: run.url,
            requests: run.requests,
            okStatuses: run.okStatuses,
            first,
            stride: children.length,
            ratePerS: run.ratePerS / children.length,
            durationMs: run.durationMs,
            warmupMs: run.warmupMs ?? DEFAULT_WARMUP_MS,
            // The remainder to the first processes: 33 over 2 is 17 and 16.
            connections:
              pool === undefined
                ? undefined
                : Math.floor(pool / children.length) + (first < pool % children.length ? 1 : 0),
          };
          child.send(JSON.stringify(command));
          return JSON.parse(await child.nextLine()) as HttpOpenLoopResult;
        }),
      );
      const latencyUs = new Histogram({
        lowestDiscernibleValue: 1,
        highestTrackableValue: 3_600_000_000,
        significantDigits: 3,
      });
      for (const r of results) for (const [low, count] of r.buckets) latencyUs.record(low, count);
      const latency = latencyUs.summary();
      const sum = (pick: (r: HttpOpenLoopResult) => number) => results.reduce((s, r) => s + pick(r), 0);
      return {
        askedPerS: sum((r) => r.asked),
        sentPerS: sum((r) => r.sentPerS),
        achievedRatePerS: sum((r) => r.achievedRatePerS),
        p50Ms: latency.p50 / 1_000,
        p99Ms: latency.p99 / 1_000,
        errors: sum((r) => r.errors),
        dropped: sum((r) => r.dropped),
        late: sum((r) => r.late),
        connectionsOpened: sum((r) => r.connectionsOpened),
      };
    },
    async close() {
      await Promise.allSettled(children.map((c) => c.stop({ line: JSON.stringify({ cmd: "close" }) })));
    },
  };
}
