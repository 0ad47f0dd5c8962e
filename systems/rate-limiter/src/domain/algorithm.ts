/**
 * The contract every rate-limit algorithm follows (`Algorithm`) and the validation
 * of its parameters; the registry `algorithms[name]` is algorithms.ts.
 *
 * Every algorithm is a PURE function over an explicit state record, with time
 * passed in as whole milliseconds read from the ENGINE's clock (Redis TIME in the
 * Lua scripts, the keyspace clock in the in-process twin; never the caller's):
 * `decide(state | undefined, nowMs, limit, cost) → Decision` and
 * `refund(state | undefined, nowMs, limit, cost) → state`. A refused request
 * never spends: its Decision carries the input state unchanged.
 *
 * State holds integers only (micro-units, ms, µs) below 2^53, so the Lua script
 * (doubles; `redis.call` sends numbers as %.17g) and this code are bit-identical,
 * and every float step (a rate times elapsed ms) is followed by `Math.floor`
 * in the same order in both.
 *
 * Each algorithm file exports one object implementing `Algorithm` (as hono's
 * routers each implement `Router`); `algorithms.ts` gathers them by name. This
 * module imports none of them, so the validators below and the algorithms that
 * use them form no cycle.
 *
 * @example
 * const limit: Limit = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 };
 * validateLimit(limit);
 * const { allowed, remaining, state } = tokenBucket.decide(undefined, 0, limit, 1);
 * // allowed === true, remaining === 4; store `state` with TTL decision.ttlMs
 */
export type AlgorithmName =
  | "token-bucket"
  | "fixed-window"
  | "sliding-window-log"
  | "sliding-window-counter"
  | "leaky-bucket"
  | "gcra";

export const algorithmNames: readonly AlgorithmName[] = [
  "token-bucket",
  "fixed-window",
  "sliding-window-log",
  "sliding-window-counter",
  "leaky-bucket",
  "gcra",
];

/** The text's bucket: `capacity` tokens, refilled at `ratePerS` tokens per second. */
export interface TokenBucketLimit {
  readonly algorithm: "token-bucket";
  readonly capacity: number;
  readonly ratePerS: number;
}

/** At most `limit` units per clock-aligned window of `windowMs`. */
export interface FixedWindowLimit {
  readonly algorithm: "fixed-window";
  readonly limit: number;
  readonly windowMs: number;
}

/** At most `limit` units in any span (now − windowMs, now]; one stored entry per unit. */
export interface SlidingWindowLogLimit {
  readonly algorithm: "sliding-window-log";
  readonly limit: number;
  readonly windowMs: number;
}

/** Current window count plus the previous one weighted by how much of it still overlaps. */
export interface SlidingWindowCounterLimit {
  readonly algorithm: "sliding-window-counter";
  readonly limit: number;
  readonly windowMs: number;
}

/** A shaper: up to `queueCapacity` units wait in a queue that drains at `ratePerS`. */
export interface LeakyBucketLimit {
  readonly algorithm: "leaky-bucket";
  readonly queueCapacity: number;
  readonly ratePerS: number;
}

/** Generic cell rate algorithm: `ratePerS` on average, `burst` units at once. */
export interface GcraLimit {
  readonly algorithm: "gcra";
  readonly burst: number;
  readonly ratePerS: number;
}

export type Limit =
  | TokenBucketLimit
  | FixedWindowLimit
  | SlidingWindowLogLimit
  | SlidingWindowCounterLimit
  | LeakyBucketLimit
  | GcraLimit;

export type LimitOf<N extends AlgorithmName> = Extract<Limit, { algorithm: N }>;

/** The outcome of one call on one key. */
export interface Decision<S> {
  /** State to write when allowed; the input state, unchanged, when refused (nothing is written). */
  readonly state: S;
  readonly allowed: boolean;
  /** Units that could still be admitted right after this call. */
  readonly remaining: number;
  /** 0 when allowed; else the least wait after which the same call is allowed. */
  readonly retryAfterMs: number;
  /** Ms until the limit is fully restored (bucket full, queue empty, window over). */
  readonly resetMs: number;
  /** Shapers only (leaky bucket): wait this long before proceeding; 0 otherwise. */
  readonly delayMs: number;
  /** PEXPIRE for `state` (≥ 1): after it the state is indistinguishable from none. */
  readonly ttlMs: number;
}

/**
 * State as it lies in Redis: a string (an integer whose key's expiry carries the state's instant,
 * stored-timed.ts, or an older "a:b"; `value` undefined when the key is absent), a hash of decimal
 * strings, or a sorted set. `expiresAtMs` is the key's absolute expiry (PEXPIRETIME): part of
 * the state for the strings; absent when the key has none.
 */
export type StoredState =
  | { readonly kind: "string"; readonly value: string | undefined; readonly expiresAtMs?: number }
  | { readonly kind: "hash"; readonly fields: Readonly<Record<string, string>> }
  | {
      readonly kind: "zset";
      readonly entries: readonly { readonly member: string; readonly score: string }[];
    };

export interface Algorithm<L extends Limit, S> {
  readonly name: L["algorithm"];
  /** File in src/store/scripts: the same mechanism over N keys, all-or-nothing (spend) or each on its own (each). */
  readonly scriptName: string;
  /** ARGV entries per key after ARGV[1] (the mode). */
  readonly argvStride: number;
  decide(state: S | undefined, nowMs: number, limit: L, cost: number, requestId?: string): Decision<S>;
  refund(state: S | undefined, nowMs: number, limit: L, cost: number, requestId?: string): S;
  /** PEXPIRE after writing `state` at `nowMs` (≥ 1). */
  ttlMs(state: S, nowMs: number, limit: L): number;
  /** `limit`: where the key's expiry carries an instant (stored-timed.ts), the span from it. */
  toStored(state: S, limit: L): StoredState;
  /** Undefined when nothing is stored; throws when what is stored is corrupt. */
  fromStored(stored: StoredState, limit: L): S | undefined;
  /** This key's ARGV slice for the script, numbers as JS prints them (shortest round trip). */
  scriptArgs(limit: L, cost: number, requestId?: string): string[];
}

/** Named bounds: they keep every stored integer and product below 2^52 (see the module comment). */
export const limitBounds = {
  /** Largest capacity / limit / queue / burst, in units. */
  maxUnits: 1_000_000,
  /** The sliding log stores one entry per unit: its limit is bounded tighter (memory ∝ limit). */
  maxLogLimit: 10_000,
  minRatePerS: 0.000_001,
  maxRatePerS: 1_000_000,
  maxWindowMs: 1_000_000_000,
  /** Longest time (capacity / rate) to refill a bucket or drain a queue completely. */
  maxFullRefillS: 10_000_000,
  /** Engine time stays below this (year 2096) so µs timestamps stay below 2^53. */
  maxNowMs: 4_000_000_000_000,
  maxRequestIdChars: 128,
  maxKeysPerCall: 16,
  /**
   * Most calls one mode-"each" script call decides (independent requests coalesced): it
   * bounds how long one call holds Redis (a few µs per key) and the size of its reply.
   */
  maxCallsPerEach: 256,
} as const;

/** 1 unit = 1e6 micro-units: fractional refill is kept as an integer. */
export const MICRO_PER_UNIT = 1_000_000;

/**
 * The least whole number of ms after which `floor(ms × rateMicroPerMs) ≥ deficitMicro`:
 * ceil(deficit / rate), moved by 1 ms in the rare cases where float rounding of the
 * quotient or of the product lands on the other side of the boundary (1/3 token/s is
 * not exact in binary). Shared by the token and leaky buckets and their scripts.
 *
 * @example
 * msUntilMicro(1_000_000, 500); // 2000: one token at 0.5 token/s
 */
export function msUntilMicro(deficitMicro: number, rateMicroPerMs: number): number {
  if (deficitMicro <= 0) return 0;
  const ms = Math.ceil(deficitMicro / rateMicroPerMs);
  if (Math.floor(ms * rateMicroPerMs) < deficitMicro) return ms + 1;
  if (Math.floor((ms - 1) * rateMicroPerMs) >= deficitMicro) return ms - 1;
  return ms;
}

function checkInteger(field: string, value: unknown, min: number, max: number): void {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${field} must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
}

function checkRate(field: string, ratePerS: unknown, units: number, unitsField: string): void {
  const { minRatePerS, maxRatePerS, maxFullRefillS } = limitBounds;
  if (typeof ratePerS !== "number" || !(ratePerS >= minRatePerS && ratePerS <= maxRatePerS)) {
    throw new RangeError(
      `${field} must be a number in [${minRatePerS}, ${maxRatePerS}], got ${String(ratePerS)}`,
    );
  }
  if (units / ratePerS > maxFullRefillS) {
    throw new RangeError(
      `${field} is too slow for ${unitsField} ${units}: a full refill would take ${units / ratePerS} s, over ${maxFullRefillS} s`,
    );
  }
}

/** The largest cost a single call can ever be admitted with. */
export function maxCost(limit: Limit): number {
  switch (limit.algorithm) {
    case "token-bucket":
      return limit.capacity;
    case "leaky-bucket":
      return limit.queueCapacity;
    case "gcra":
      return limit.burst;
    default:
      return limit.limit;
  }
}

/**
 * Throws a RangeError naming the first invalid field of `limit`.
 *
 * @example
 * validateLimit({ algorithm: "token-bucket", capacity: 0, ratePerS: 1 });
 * // RangeError: limit.capacity must be an integer in [1, 1000000], got 0
 */
export function validateLimit(limit: Limit): void {
  const { maxUnits, maxLogLimit, maxWindowMs } = limitBounds;
  switch (limit?.algorithm) {
    case "token-bucket":
      checkInteger("limit.capacity", limit.capacity, 1, maxUnits);
      checkRate("limit.ratePerS", limit.ratePerS, limit.capacity, "capacity");
      return;
    case "leaky-bucket":
      checkInteger("limit.queueCapacity", limit.queueCapacity, 1, maxUnits);
      checkRate("limit.ratePerS", limit.ratePerS, limit.queueCapacity, "queueCapacity");
      return;
    case "gcra":
      checkInteger("limit.burst", limit.burst, 1, maxUnits);
      checkRate("limit.ratePerS", limit.ratePerS, limit.burst, "burst");
      return;
    case "sliding-window-log":
      checkInteger("limit.limit", limit.limit, 1, maxLogLimit);
      checkInteger("limit.windowMs", limit.windowMs, 1, maxWindowMs);
      return;
    case "fixed-window":
    case "sliding-window-counter":
      checkInteger("limit.limit", limit.limit, 1, maxUnits);
      checkInteger("limit.windowMs", limit.windowMs, 1, maxWindowMs);
      return;
    default:
      throw new RangeError(
        `limit.algorithm must be one of ${algorithmNames.join(", ")}, got ${String((limit as { algorithm?: unknown })?.algorithm)}`,
      );
  }
}

/**
 * Checks everything one decide/refund call takes; throws a RangeError naming the field.
 *
 * @example
 * validateCall({ algorithm: "gcra", burst: 5, ratePerS: 1 }, 1_000, 6);
 * // RangeError: cost must be an integer in [1, 5] (a larger cost could never pass), got 6
 */
export function validateCall(limit: Limit, nowMs: number, cost: number): void {
  validateLimit(limit);
  checkInteger("nowMs", nowMs, 0, limitBounds.maxNowMs);
  const max = maxCost(limit);
  if (!Number.isInteger(cost) || cost < 1 || cost > max) {
    throw new RangeError(
      `cost must be an integer in [1, ${max}] (a larger cost could never pass), got ${cost}`,
    );
  }
}

/**
 * A request id becomes a sorted-set member (`<requestId>:<unit>`), so it must be unique
 * per request, printable ASCII without spaces, and bounded.
 *
 * @example
 * validateRequestId("9b2f-41"); // ok
 */
export function validateRequestId(requestId: string | undefined): string {
  const max = limitBounds.maxRequestIdChars;
  if (typeof requestId !== "string" || !/^[\x21-\x7e]+$/.test(requestId) || requestId.length > max) {
    throw new RangeError(
      `requestId must be 1..${max} printable ASCII characters, got ${JSON.stringify(requestId)}`,
    );
  }
  return requestId;
}

/**
 * Bytes of a stored state: field names plus decimal values, or members plus scores
 * (what a key costs beyond Redis's own per-key overhead; RL-07, RL-18).
 *
 * @example
 * storedBytes({ kind: "hash", fields: { tokensMicro: "4000000", tsMs: "1000" } }); // 11 + 7 + 4 + 4 = 26
 * storedBytes({ kind: "string", value: "4000000:1000" }); // 12
 */
export function storedBytes(stored: StoredState): number {
  if (stored.kind === "string") return stored.value?.length ?? 0;
  if (stored.kind === "hash") {
    return Object.entries(stored.fields).reduce(
      (sum, [field, value]) => sum + field.length + value.length,
      0,
    );
  }
  return stored.entries.reduce((sum, entry) => sum + entry.member.length + entry.score.length, 0);
}

/**
 * Parses a stored decimal integer field, asserting it is one (a corrupt key is a bug
 * report, not a user error).
 *
 * @example
 * readStoredInteger({ tsMs: "1000" }, "tsMs"); // 1000
 */
export function readStoredInteger(fields: Readonly<Record<string, string>>, field: string): number {
  const text = fields[field];
  const value = Number(text);
  if (text === undefined || !/^-?\d+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new Error(`stored field ${field} is not a safe integer: ${JSON.stringify(text)}`);
  }
  return value;
}

/**
 * Reads a two-integer state in the older formats of issue 15: the string "a:b", or before it
 * a hash of `fields` (the scripts and their twins rewrite such a key in the current format,
 * stored-timed.ts, on the decision that reads it). Undefined when nothing is stored; throws
 * when corrupt.
 *
 * @example
 * readStoredPair({ kind: "string", value: "4000000:1000" }, ["tokensMicro", "tsMs"]); // [4000000, 1000]
 * readStoredPair({ kind: "hash", fields: { tokensMicro: "4000000", tsMs: "1000" } }, ["tokensMicro", "tsMs"]); // [4000000, 1000]
 */
export function readStoredPair(
  stored: StoredState,
  fields: readonly [string, string],
): [number, number] | undefined {
  if (stored.kind === "hash") {
    if (Object.keys(stored.fields).length === 0) return undefined;
    return [readStoredInteger(stored.fields, fields[0]), readStoredInteger(stored.fields, fields[1])];
  }
  if (stored.kind !== "string")
    throw new Error(`a ${fields.join("/")} pair is a string, got a ${stored.kind}`);
  if (stored.value === undefined) return undefined;
  const [a, b, ...rest] = stored.value.split(":");
  if (rest.length > 0) throw new Error(`stored pair is not "a:b": ${JSON.stringify(stored.value)}`);
  const parts = { [fields[0]]: a ?? "", [fields[1]]: b ?? "" };
  return [readStoredInteger(parts, fields[0]), readStoredInteger(parts, fields[1])];
}

function checkAlgorithmOf(name: AlgorithmName, limit: Limit): void {
  if (limit.algorithm !== name) {
    throw new RangeError(`limit.algorithm must be ${name} for every key, got ${limit.algorithm}`);
  }
}

/** One key's part of a multi-key call. */
export interface KeyCall<L extends Limit, S> {
  readonly state: S | undefined;
  readonly limit: L;
  readonly cost: number;
  readonly requestId?: string;
}

/** The outcome of an all-or-nothing call over several keys. */
export interface MultiDecision<S> {
  /** True only when every key allows; then every `decisions[i].state` is written, else none. */
  readonly allowed: boolean;
  /** 0 when allowed; else the largest retryAfterMs among the refusing keys. */
  readonly retryAfterMs: number;
  /** The largest shaping delay among the keys when allowed; 0 otherwise. */
  readonly delayMs: number;
  /** Each key's own decision, as if it were alone. */
  readonly decisions: readonly Decision<S>[];
}

/**
 * All-or-nothing over N keys, exactly as every `<algorithm>-n.lua` does it: decide every
 * key; write all of them only if all allow (RL-10: user AND IP).
 *
 * @example
 * const tb = tokenBucket; // or algorithms["token-bucket"]
 * const user = { algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 } as const;
 * const ip = { algorithm: "token-bucket", capacity: 100, ratePerS: 10 } as const;
 * const out = decideAll(tb, 0, [{ state: undefined, limit: user, cost: 1 }, { state: undefined, limit: ip, cost: 1 }]);
 * // out.allowed === true: write out.decisions[0].state and out.decisions[1].state
 */
export function decideAll<L extends Limit, S>(
  algorithm: Algorithm<L, S>,
  nowMs: number,
  calls: readonly KeyCall<L, S>[],
): MultiDecision<S> {
  checkInteger("calls.length", calls.length, 1, limitBounds.maxKeysPerCall);
  const decisions = calls.map((call) => {
    checkAlgorithmOf(algorithm.name, call.limit);
    return algorithm.decide(call.state, nowMs, call.limit, call.cost, call.requestId);
  });
  const allowed = decisions.every((decision) => decision.allowed);
  const retryAfterMs = Math.max(0, ...decisions.map((decision) => decision.retryAfterMs));
  const delayMs = allowed ? Math.max(0, ...decisions.map((decision) => decision.delayMs)) : 0;
  return { allowed, retryAfterMs, delayMs, decisions };
}

/** One call of a mode-"each" batch: independent requests coalesced into one script call. */
export interface EachCall<L extends Limit, S> extends KeyCall<L, S> {
  /** Calls on one key see each other (two concurrent requests of one user), so the key is named. */
  readonly key: string;
}

/**
 * Independent decisions in order, exactly as every `<algorithm>-n.lua` does in mode "each":
 * each call is decided on its own (no all-or-nothing); an allowed call's state is what the
 * next call on the same key sees, a refused one changes nothing. `state` is what the key
 * held before the batch: only the first call on a key supplies it, later calls on that key
 * are decided on what the calls before them left. Throws like `decide` at the first bad call
 * (a reused request id of the sliding log): the script stops there too, and on Redis the keys
 * decided before that call stay written (a script is never rolled back).
 *
 * @example
 * const tb = tokenBucket; // or algorithms["token-bucket"]
 * const limit = { algorithm: "token-bucket", capacity: 1, ratePerS: 1 } as const;
 * const [a, again, b] = decideEach(tb, 0, [
 *   { key: "u1", state: undefined, limit, cost: 1 },
 *   { key: "u1", state: undefined, limit, cost: 1 }, // sees the first call's spend
 *   { key: "u2", state: undefined, limit, cost: 1 },
 * ]);
 * // a.allowed === true, again.allowed === false (retryAfterMs 1000), b.allowed === true
 */
export function decideEach<L extends Limit, S>(
  algorithm: Algorithm<L, S>,
  nowMs: number,
  calls: readonly EachCall<L, S>[],
): Decision<S>[] {
  checkInteger("calls.length", calls.length, 1, limitBounds.maxCallsPerEach);
  const latest = new Map<string, S | undefined>();
  return calls.map((call) => {
    checkAlgorithmOf(algorithm.name, call.limit);
    const state = latest.has(call.key) ? latest.get(call.key) : call.state;
    const decision = algorithm.decide(state, nowMs, call.limit, call.cost, call.requestId);
    // A refusal writes nothing: the next call on the key sees what this one saw.
    latest.set(call.key, decision.allowed ? decision.state : state);
    return decision;
  });
}
