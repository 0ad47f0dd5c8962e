/**
 * RL-07: the text's comparison of algorithms (000 §1.3), measured instead of asserted.
 * The same deterministic traffic runs through every algorithm, each configured for
 * "100 per minute", with explicit times (no clock, no I/O), and the run measures:
 *
 * - the largest burst (most units let through in any 1 s and any 60 s span; the
 *   traffic holds a burst across a minute boundary: 100 at the end of one minute and
 *   100 at the start of the next, which a fixed window admits entirely);
 * - the error against an exact sliding log: how far the most in any 60 s goes over
 *   the limit (overshoot), and, judged on each algorithm's own output, the requests
 *   let through while the last 60 s already held the limit (over) and those refused
 *   while it had room (wrongly refused). Under a 2× overload every decision sits at the
 *   margin, so an approximate algorithm disagrees with the exact log on many single
 *   decisions even when its counts are off by only a few units: read both columns;
 * - the sustained rate under a 2× overload, and how uniform the output is (gaps);
 * - bytes of stored state per key (field names plus decimal values, as in Redis).
 *
 * "Output" is when a request reaches the protected system: its admission time, plus
 * delayMs for the leaky bucket, which shapes instead of refusing.
 */
import { type AlgorithmName, algorithmNames, type Decision, type Limit, storedBytes } from "./algorithm.ts";
import { algorithms } from "./algorithms.ts";

export interface AlgorithmComparisonOptions {
  /** The limit every algorithm is configured for, in units per minute. */
  readonly limitPerMin?: number;
  /** Length of the 2× overload phase. */
  readonly overloadMinutes?: number;
  /** Uniform [0, 1) source for arrivals and request ids; a seeded one by default. */
  readonly random?: () => number;
}

export interface AlgorithmComparisonRow {
  readonly algorithm: AlgorithmName;
  readonly params: string;
  readonly requests: number;
  readonly admitted: number;
  /** Most outputs in any 1 s span. */
  readonly burstMax1s: number;
  /** Most outputs in any 60 s span (a fixed window reaches 2 × the limit here). */
  readonly outputMax60s: number;
  /** (outputMax60s − limit) / limit: 0 for an exact limiter. */
  readonly overshootPct: number;
  /** Outputs per minute in the overload phase, after its first minute. */
  readonly sustainedPerMin: number;
  /** % of requests let through while the last 60 s of output already held the limit. */
  readonly overLimitPct: number;
  /** % of requests refused while the last 60 s of output had room (an exact log admits them). */
  readonly wronglyRefusedPct: number;
  /** Smallest and largest gap between consecutive outputs in the overload phase. */
  readonly gapMinMs: number;
  readonly gapMaxMs: number;
  /** Coefficient of variation of those gaps: 0 is perfectly uniform output. */
  readonly gapCv: number;
  /** Largest stored state of the key during the run. */
  readonly stateBytesMax: number;
}

const MINUTE_MS = 60_000;
/** Traffic starts on a minute boundary of a real date (2026-10-22T00:00Z), so stored
 * timestamps have the 13 digits they have in production and bytes per key are realistic. */
const START_MS = 1_792_627_200_000;
/** The boundary burst straddles START_MS + 1 min: 1 s before it and 1 s after it. */
const BOUNDARY_MS = START_MS + MINUTE_MS;
/** The overload starts after 3 idle minutes, when every algorithm is back to empty. */
const OVERLOAD_START_MS = START_MS + 4 * MINUTE_MS;

/** Mulberry32: a small seeded PRNG, so the default run is reproducible. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * The limit each algorithm gets for "N per minute".
 *
 * @example
 * limitsPerMinute(100)["token-bucket"]; // { algorithm: "token-bucket", capacity: 100, ratePerS: 1.666… }
 */
export function limitsPerMinute(perMin: number): { readonly [N in AlgorithmName]: Limit } {
  const ratePerS = perMin / 60;
  return {
    "token-bucket": { algorithm: "token-bucket", capacity: perMin, ratePerS },
    "fixed-window": { algorithm: "fixed-window", limit: perMin, windowMs: MINUTE_MS },
    "sliding-window-log": { algorithm: "sliding-window-log", limit: perMin, windowMs: MINUTE_MS },
    "sliding-window-counter": { algorithm: "sliding-window-counter", limit: perMin, windowMs: MINUTE_MS },
    "leaky-bucket": { algorithm: "leaky-bucket", queueCapacity: perMin, ratePerS },
    gcra: { algorithm: "gcra", burst: perMin, ratePerS },
  };
}

interface Request {
  readonly atMs: number;
  readonly requestId: string;
}

/** A UUID-shaped id (36 characters), so the log's bytes are those of a realistic key. */
function requestIdFrom(random: () => number): string {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(random() * 16).toString(16)).join("");
  return `${hex(8)}-${hex(4)}-4${hex(3)}-${hex(4)}-${hex(12)}`;
}

/**
 * The traffic: 2 × limit requests evenly over the 2 s around a minute boundary, then
 * Poisson arrivals at 2 × the limit for `overloadMinutes`.
 *
 * @example
 * comparisonTraffic(100, 10, Math.random).length; // ≈ 200 + 2000
 */
export function comparisonTraffic(perMin: number, overloadMinutes: number, random: () => number): Request[] {
  const requests: Request[] = [];
  const boundaryGapMs = 1_000 / perMin;
  for (let i = 0; i < 2 * perMin; i++) {
    requests.push({
      atMs: BOUNDARY_MS - 1_000 + Math.floor(i * boundaryGapMs),
      requestId: requestIdFrom(random),
    });
  }
  const meanGapMs = MINUTE_MS / (2 * perMin);
  const endMs = OVERLOAD_START_MS + overloadMinutes * MINUTE_MS;
  let exactMs = OVERLOAD_START_MS;
  for (;;) {
    exactMs += -Math.log(1 - random()) * meanGapMs;
    if (exactMs >= endMs) return requests;
    requests.push({ atMs: Math.floor(exactMs), requestId: requestIdFrom(random) });
  }
}

interface Run {
  readonly outputsMs: number[];
  readonly refusedAtMs: number[];
  readonly stateBytesMax: number;
}

/** Plays the traffic through one algorithm with unit costs. */
function runOne(name: AlgorithmName, limit: Limit, traffic: readonly Request[]): Run {
  const algorithm = algorithms[name] as unknown as {
    decide(state: unknown, nowMs: number, limit: Limit, cost: number, requestId?: string): Decision<unknown>;
    toStored(state: unknown, limit: Limit): Parameters<typeof storedBytes>[0];
  };
  let state: unknown;
  let stateBytesMax = 0;
  const outputsMs: number[] = [];
  const refusedAtMs: number[] = [];
  for (const request of traffic) {
    const decision = algorithm.decide(state, request.atMs, limit, 1, request.requestId);
    if (!decision.allowed) {
      refusedAtMs.push(request.atMs);
      continue;
    }
    state = decision.state;
    outputsMs.push(request.atMs + decision.delayMs);
    stateBytesMax = Math.max(stateBytesMax, storedBytes(algorithm.toStored(state, limit)));
  }
  outputsMs.sort((a, b) => a - b);
  return { outputsMs, refusedAtMs, stateBytesMax };
}

/** Most sorted times within any span [t, t + spanMs). */
function maxInSpan(sortedMs: readonly number[], spanMs: number): number {
  let best = 0;
  let first = 0;
  for (let last = 0; last < sortedMs.length; last++) {
    while (sortedMs[last]! - sortedMs[first]! >= spanMs) first++;
    best = Math.max(best, last - first + 1);
  }
  return best;
}

/** How many sorted times are ≤ atMs (binary search). */
function countUpTo(sortedMs: readonly number[], atMs: number): number {
  let low = 0;
  let high = sortedMs.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (sortedMs[middle]! <= atMs) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Errors against an exact sliding log over (t − 60 s, t], judged on the algorithm's own output. */
function errorsAgainstExactLog(run: Run, perMin: number): { over: number; wronglyRefused: number } {
  const inSpan = (atMs: number) =>
    countUpTo(run.outputsMs, atMs) - countUpTo(run.outputsMs, atMs - MINUTE_MS);
  // Ties share one ms: judge each output against everything up to and including its own index.
  const over = run.outputsMs.filter(
    (atMs, i) => i + 1 - countUpTo(run.outputsMs, atMs - MINUTE_MS) > perMin,
  ).length;
  const wronglyRefused = run.refusedAtMs.filter((atMs) => inSpan(atMs) + 1 <= perMin).length;
  return { over, wronglyRefused };
}

/** Gap statistics between consecutive outputs inside [fromMs, toMs). */
function gapStats(sortedMs: readonly number[], fromMs: number, toMs: number) {
  const inside = sortedMs.filter((atMs) => atMs >= fromMs && atMs < toMs);
  const gaps = inside.slice(1).map((atMs, i) => atMs - inside[i]!);
  if (gaps.length === 0) return { gapMinMs: 0, gapMaxMs: 0, gapCv: 0, count: inside.length };
  const mean = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
  const variance = gaps.reduce((sum, gap) => sum + (gap - mean) ** 2, 0) / gaps.length;
  return {
    gapMinMs: Math.min(...gaps),
    gapMaxMs: Math.max(...gaps),
    gapCv: Math.sqrt(variance) / mean,
    count: inside.length,
  };
}

function describeLimit(limit: Limit): string {
  const { algorithm: _, ...params } = limit;
  return Object.entries(params)
    .map(([field, value]) => `${field} ${Number.isInteger(value) ? value : (value as number).toFixed(3)}`)
    .join(", ");
}

const round = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits;

/**
 * Runs the comparison: one row per algorithm, same traffic, same "N per minute".
 *
 * @example
 * const rows = compareAlgorithms();
 * rows.find((r) => r.algorithm === "fixed-window")?.outputMax60s; // 200: 2 × the limit
 */
export function compareAlgorithms(options: AlgorithmComparisonOptions = {}): AlgorithmComparisonRow[] {
  const perMin = options.limitPerMin ?? 100;
  const overloadMinutes = options.overloadMinutes ?? 10;
  const traffic = comparisonTraffic(perMin, overloadMinutes, options.random ?? seededRandom(0x5eed));
  const limits = limitsPerMinute(perMin);
  const steadyFromMs = OVERLOAD_START_MS + MINUTE_MS;
  const steadyToMs = OVERLOAD_START_MS + overloadMinutes * MINUTE_MS;
  return algorithmNames.map((name) => {
    const run = runOne(name, limits[name], traffic);
    const errors = errorsAgainstExactLog(run, perMin);
    const gaps = gapStats(run.outputsMs, steadyFromMs, steadyToMs);
    const outputMax60s = maxInSpan(run.outputsMs, MINUTE_MS);
    return {
      algorithm: name,
      params: describeLimit(limits[name]),
      requests: traffic.length,
      admitted: run.outputsMs.length,
      burstMax1s: maxInSpan(run.outputsMs, 1_000),
      outputMax60s,
      overshootPct: round((100 * (outputMax60s - perMin)) / perMin, 1),
      sustainedPerMin: round((gaps.count / (steadyToMs - steadyFromMs)) * MINUTE_MS, 1),
      overLimitPct: round((100 * errors.over) / traffic.length, 2),
      wronglyRefusedPct: round((100 * errors.wronglyRefused) / traffic.length, 2),
      gapMinMs: gaps.gapMinMs,
      gapMaxMs: gaps.gapMaxMs,
      gapCv: round(gaps.gapCv, 3),
      stateBytesMax: run.stateBytesMax,
    };
  });
}

/**
 * The rows as a markdown table (for the README and `casebook bench`).
 *
 * @example
 * renderComparisonTable(compareAlgorithms()); // "| algorithm | params | … |\n|---|…"
 */
export function renderComparisonTable(rows: readonly AlgorithmComparisonRow[]): string {
  const header = [
    "algorithm",
    "params",
    "admitted / requests",
    "max in 1 s",
    "max in 60 s",
    "overshoot %",
    "sustained /min",
    "over limit %",
    "wrongly refused %",
    "output gap ms (min–max)",
    "gap CV",
    "state bytes/key",
  ];
  const lines = rows.map((r) =>
    [
      r.algorithm,
      r.params,
      `${r.admitted} / ${r.requests}`,
      r.burstMax1s,
      r.outputMax60s,
      r.overshootPct,
      r.sustainedPerMin,
      r.overLimitPct,
      r.wronglyRefusedPct,
      `${r.gapMinMs}–${r.gapMaxMs}`,
      r.gapCv,
      r.stateBytesMax,
    ].join(" | "),
  );
  const legend = [
    "",
    "Same traffic for every algorithm: 2 × the limit spread over the 2 s around a minute boundary, then",
    "Poisson arrivals at 2 × the limit. Output = admission time (+ delayMs for the leaky bucket, a shaper).",
    "Over limit / wrongly refused: % of requests decided otherwise than an exact sliding log fed the same",
    "history would; at 2 × overload every decision is marginal, so read them with the overshoot column.",
  ];
  return [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...lines.map((l) => `| ${l} |`),
  ]
    .concat(legend)
    .join("\n")
    .concat("\n");
}

/**
 * Runs the comparison and hands the markdown table to `write` (the caller owns the I/O).
 *
 * @example
 * printAlgorithmComparison((text) => process.stdout.write(text));
 */
export function printAlgorithmComparison(
  write: (markdown: string) => void,
  options: AlgorithmComparisonOptions = {},
): AlgorithmComparisonRow[] {
  const rows = compareAlgorithms(options);
  write(renderComparisonTable(rows));
  return rows;
}
