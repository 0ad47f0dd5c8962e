/**
 * Load for benchmarks, in the two shapes that answer different questions:
 *
 * - **open loop** (`runOpenLoop`): requests arrive at a fixed rate whatever the
 *   system does, like independent users. Each latency is measured from the request's
 *   INTENDED send time, so when the system (or the sender) stalls, the requests that
 *   should have gone out meanwhile carry the stall in their latency instead of never
 *   being sent (coordinated omission, Gil Tene). This is the shape for latency.
 * - **closed loop** (`runClosedLoop`): N workers each send the next request when the
 *   last one answered, as fast as possible. This measures max throughput; its
 *   latencies hide stalls by construction and are reported as service times.
 *
 * Latencies go into an HDR histogram in microseconds; the report gives ms.
 *
 * @example
 * const report = await runOpenLoop({
 *   ratePerS: 2_000, durationMs: 10_000, warmupMs: 2_000, maxInFlight: 512,
 *   task: () => redis.get("k"),
 * });
 * report.latencyMs.p99; // ms, from intended send time
 */
import { type Clock, systemClock } from "@casebook/kit/clock";
import { Histogram } from "@casebook/kit/histogram";
import { labErrors } from "./lab-errors.ts";

export interface RequestContext {
  /** 0-based index of the request in the run (warmup included). */
  index: number;
  /** Aborted when the request passes `requestTimeoutMs`: the run counts it as a timeout and moves on. */
  signal: AbortSignal;
}

/** One request; a rejection counts as an error. */
export type LoadTask = (context: RequestContext) => Promise<unknown>;

export type LoadPhase = "warmup" | "measure" | "drain";

export interface LoadProgress {
  phase: LoadPhase;
  elapsedMs: number;
  sent: number;
  completed: number;
  inFlight: number;
  errors: number;
  dropped: number;
}

interface CommonOptions {
  task: LoadTask;
  /** How long to run, warmup included. Exactly one of `durationMs` and `count` is required. */
  durationMs?: number;
  /** How many requests to run, warmup included. */
  count?: number;
  /** Leading time whose requests run but are not measured (JIT, pools, caches). Default 0. */
  warmupMs?: number;
  /** A request not answered within this counts as an error (a timeout) and frees its slot. Default 30 000 ms. */
  requestTimeoutMs?: number;
  /** Called every `progressEveryMs` and at each phase change. */
  onProgress?: (progress: LoadProgress) => void;
  /** Default 1 000 ms. */
  progressEveryMs?: number;
  /** Time source for measurement; timers are real. Default the system clock. */
  clock?: Clock;
}

export interface OpenLoopOptions extends CommonOptions {
  /** Fixed arrival rate, requests per second. */
  ratePerS: number;
  /** Bound on requests in flight; a request due while it is reached is dropped and counted. Default 1 000. */
  maxInFlight?: number;
  /** A request sent more than this after its intended time counts as late (the sender stalled). Default 10 ms. */
  lateAfterMs?: number;
}

export interface ClosedLoopOptions extends CommonOptions {
  /** Workers, each with one request in flight. */
  concurrency: number;
  /**
   * Workers start one by one across this span (worker i at i × span / concurrency) instead
   * of all at once. Requests of equal length started together end together and restart
   * together for the whole run, so every arrival would be part of one burst of
   * `concurrency`; spread, the run holds `concurrency` in flight with arrivals apart, as
   * independent clients would. Give it the length of one request. Default 0 (all at once).
   */
  spreadStartMs?: number;
}

export interface LatencySummaryMs {
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface LoadReport {
  mode: "open" | "closed";
  /** Measured requests sent (warmup excluded): ok + errors. */
  count: number;
  ok: number;
  /** Rejections and timeouts. */
  errors: number;
  /** Errors that were `requestTimeoutMs` passing; recorded at that latency, so the stall shows. */
  timeouts: number;
  /** Open loop: due while `maxInFlight` were in flight, so never sent. */
  dropped: number;
  /** Open loop: sent more than `lateAfterMs` after their intended time. */
  late: number;
  /** Requests run during warmup, not measured. */
  warmupCount: number;
  /** Open loop: the rate asked for. */
  targetRatePerS?: number;
  /** Measured completions per second of the measured window. */
  achievedRatePerS: number;
  /** From the end of warmup to the last measured completion. */
  measuredMs: number;
  latencyMs: LatencySummaryMs;
  /** Every measured latency, in µs, for merging or custom percentiles. */
  histogram: Histogram;
}

const DEFAULTS = {
  warmupMs: 0,
  requestTimeoutMs: 30_000,
  progressEveryMs: 1_000,
  maxInFlight: 1_000,
  lateAfterMs: 10,
};

/** Latency histogram: 1 µs resolution up to 1 h, 3 significant digits. */
function latencyHistogram(): Histogram {
  return new Histogram({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 3_600_000_000,
    significantDigits: 3,
  });
}

function invalid(option: string, detail: string): Error {
  return labErrors.create("LAB_LOAD_INVALID", { detail: `${option}: ${detail}`, fields: { option } });
}

function validateCommon(options: CommonOptions): void {
  const { durationMs, count, warmupMs = 0 } = options;
  if ((durationMs === undefined) === (count === undefined)) {
    throw invalid("durationMs", "give exactly one of durationMs and count");
  }
  if (durationMs !== undefined && !(durationMs > 0 && Number.isFinite(durationMs))) {
    throw invalid("durationMs", `must be a finite number > 0, got ${durationMs}`);
  }
  if (count !== undefined && !(Number.isSafeInteger(count) && count > 0)) {
    throw invalid("count", `must be an integer > 0, got ${count}`);
  }
  if (!(warmupMs >= 0) || (durationMs !== undefined && warmupMs >= durationMs)) {
    throw invalid("warmupMs", `must be >= 0 and below durationMs, got ${warmupMs}`);
  }
  for (const name of ["requestTimeoutMs", "progressEveryMs"] as const) {
    const value = options[name];
    if (value !== undefined && !(value > 0)) throw invalid(name, `must be > 0, got ${value}`);
  }
}

function summarizeMs(histogram: Histogram): LatencySummaryMs {
  const s = histogram.summary();
  const ms = (us: number) => us / 1_000;
  return {
    min: ms(s.min),
    mean: ms(s.mean),
    p50: ms(s.p50),
    p90: ms(s.p90),
    p99: ms(s.p99),
    p999: ms(s.p999),
    max: ms(s.max),
  };
}

/** Counters shared by both loops while a run is going. */
class Tally {
  readonly histogram = latencyHistogram();
  sent = 0;
  completed = 0;
  ok = 0;
  errors = 0;
  dropped = 0;
  late = 0;
  timeouts = 0;
  warmupCount = 0;
  inFlight = 0;
  lastCompletionMs = 0;
  phase: LoadPhase = "warmup";

  record(measured: boolean, latencyMs: number, outcome: Outcome, nowMs: number): void {
    this.completed++;
    if (!measured) return;
    this.histogram.record(Math.max(0, Math.round(latencyMs * 1_000)));
    if (outcome === "ok") this.ok++;
    else this.errors++;
    if (outcome === "timeout") this.timeouts++;
    this.lastCompletionMs = Math.max(this.lastCompletionMs, nowMs);
  }

  progress(elapsedMs: number): LoadProgress {
    const { phase, sent, completed, inFlight, errors, dropped } = this;
    return { phase, elapsedMs, sent, completed, inFlight, errors, dropped };
  }

  report(mode: "open" | "closed", measureStartMs: number, targetRatePerS?: number): LoadReport {
    const measuredMs = Math.max(0, this.lastCompletionMs - measureStartMs);
    const answered = this.ok + this.errors;
    return {
      mode,
      count: answered,
      ok: this.ok,
      errors: this.errors,
      timeouts: this.timeouts,
      dropped: this.dropped,
      late: this.late,
      warmupCount: this.warmupCount,
      ...(targetRatePerS === undefined ? {} : { targetRatePerS }),
      achievedRatePerS: measuredMs > 0 ? (answered * 1_000) / measuredMs : 0,
      measuredMs,
      latencyMs: summarizeMs(this.histogram),
      histogram: this.histogram,
    };
  }
}

type Outcome = "ok" | "error" | "timeout";

/** Runs one request and records it; settles within `requestTimeoutMs`, never rejects. */
async function runOne(
  options: CommonOptions,
  tally: Tally,
  request: { index: number; startMs: number; measured: boolean },
): Promise<void> {
  const clock = options.clock ?? systemClock;
  const controller = new AbortController();
  tally.sent++;
  tally.inFlight++;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new Error("request passed requestTimeoutMs"));
      resolve("timeout");
    }, options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs);
  });
  let answered: Promise<Outcome>;
  try {
    answered = options.task({ index: request.index, signal: controller.signal }).then(
      () => "ok",
      () => "error",
    );
  } catch {
    answered = Promise.resolve("error"); // a task that throws instead of rejecting
  }
  const outcome = await Promise.race([answered, timedOut]);
  clearTimeout(timer);
  tally.inFlight--;
  const now = clock.monotonicMs();
  tally.record(request.measured, now - request.startMs, outcome, now);
}

/** Reports the first phase now, then every `progressEveryMs` and at each phase change. */
function progressReporter(options: CommonOptions, tally: Tally, startMs: number, first: LoadPhase) {
  const clock = options.clock ?? systemClock;
  const emit = () => options.onProgress?.(tally.progress(clock.monotonicMs() - startMs));
  tally.phase = first;
  emit();
  const timer = options.onProgress
    ? setInterval(emit, options.progressEveryMs ?? DEFAULTS.progressEveryMs)
    : undefined;
  return {
    phase(phase: LoadPhase) {
      if (tally.phase === phase) return;
      tally.phase = phase;
      emit();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}

/** Closes the measured window: the last measured completion, or now when nothing completed. */
function closeWindow(options: CommonOptions, tally: Tally, measureStartMs: number): void {
  const now = (options.clock ?? systemClock).monotonicMs();
  if (tally.lastCompletionMs === 0) tally.lastCompletionMs = Math.max(now, measureStartMs);
}

/**
 * Open loop: sends at `ratePerS` on a fixed schedule and measures each latency
 * from the intended send time (see the file comment).
 *
 * @example
 * const r = await runOpenLoop({ ratePerS: 500, durationMs: 5_000, warmupMs: 1_000, task: () => fetch(url) });
 * console.log(r.achievedRatePerS, r.latencyMs.p99, r.dropped);
 */
export async function runOpenLoop(options: OpenLoopOptions): Promise<LoadReport> {
  validateCommon(options);
  const { ratePerS } = options;
  if (!(ratePerS > 0 && Number.isFinite(ratePerS))) throw invalid("ratePerS", `must be > 0, got ${ratePerS}`);
  const maxInFlight = options.maxInFlight ?? DEFAULTS.maxInFlight;
  if (!(Number.isSafeInteger(maxInFlight) && maxInFlight > 0)) {
    throw invalid("maxInFlight", `must be an integer > 0, got ${maxInFlight}`);
  }
  const clock = options.clock ?? systemClock;
  const intervalMs = 1_000 / ratePerS;
  const total = options.count ?? Math.max(1, Math.floor(((options.durationMs ?? 0) * ratePerS) / 1_000));
  const warmupMs = options.warmupMs ?? DEFAULTS.warmupMs;
  const lateAfterMs = options.lateAfterMs ?? DEFAULTS.lateAfterMs;
  const tally = new Tally();
  const running = new Set<Promise<void>>();
  const startMs = clock.monotonicMs();
  const measureStartMs = startMs + warmupMs;
  const progress = progressReporter(options, tally, startMs, warmupMs > 0 ? "warmup" : "measure");
  let next = 0;
  await new Promise<void>((sendingDone) => {
    const tick = () => {
      const now = clock.monotonicMs();
      for (; next < total && startMs + next * intervalMs <= now; next++) {
        const intendedMs = startMs + next * intervalMs;
        const measured = intendedMs >= measureStartMs;
        if (measured) progress.phase("measure");
        if (tally.inFlight >= maxInFlight) {
          if (measured) tally.dropped++;
          continue;
        }
        if (measured && now - intendedMs > lateAfterMs) tally.late++;
        if (!measured) tally.warmupCount++;
        const request = runOne(options, tally, { index: next, startMs: intendedMs, measured });
        running.add(request);
        void request.then(() => running.delete(request));
      }
      if (next >= total) return sendingDone();
      setTimeout(tick, Math.max(0, startMs + next * intervalMs - clock.monotonicMs()));
    };
    tick();
  });
  progress.phase("drain");
  await Promise.all(running); // each settles within requestTimeoutMs
  closeWindow(options, tally, measureStartMs);
  progress.stop();
  return tally.report("open", measureStartMs, ratePerS);
}

/**
 * Closed loop: `concurrency` workers, each sending its next request as soon as the
 * last one answers. For max throughput; latencies are service times (see file comment).
 *
 * @example
 * const r = await runClosedLoop({ concurrency: 32, durationMs: 5_000, warmupMs: 1_000, task: () => redis.incr("n") });
 * console.log(r.achievedRatePerS);
 */
export async function runClosedLoop(options: ClosedLoopOptions): Promise<LoadReport> {
  validateCommon(options);
  const { concurrency, spreadStartMs = 0 } = options;
  if (!(Number.isSafeInteger(concurrency) && concurrency > 0)) {
    throw invalid("concurrency", `must be an integer > 0, got ${concurrency}`);
  }
  if (!(spreadStartMs >= 0 && Number.isFinite(spreadStartMs))) {
    throw invalid("spreadStartMs", `must be a finite number >= 0, got ${spreadStartMs}`);
  }
  const clock = options.clock ?? systemClock;
  const tally = new Tally();
  const startMs = clock.monotonicMs();
  const measureStartMs = startMs + (options.warmupMs ?? DEFAULTS.warmupMs);
  const endMs = options.durationMs === undefined ? Number.POSITIVE_INFINITY : startMs + options.durationMs;
  const total = options.count ?? Number.POSITIVE_INFINITY;
  const progress = progressReporter(options, tally, startMs, measureStartMs > startMs ? "warmup" : "measure");
  let next = 0;
  const worker = async (_: unknown, workerIndex: number) => {
    const startAfterMs = (workerIndex * spreadStartMs) / concurrency;
    if (startAfterMs > 0) await new Promise((resolve) => setTimeout(resolve, startAfterMs));
    while (next < total) {
      const now = clock.monotonicMs();
      if (now >= endMs) return;
      const measured = now >= measureStartMs;
      progress.phase(measured ? "measure" : "warmup");
      if (!measured) tally.warmupCount++;
      await runOne(options, tally, { index: next++, startMs: now, measured });
    }
  };
  // Each request settles within requestTimeoutMs, so the workers end by endMs + that bound.
  await Promise.all(Array.from({ length: concurrency }, worker));
  progress.phase("drain");
  closeWindow(options, tally, measureStartMs);
  progress.stop();
  return tally.report("closed", measureStartMs);
}
