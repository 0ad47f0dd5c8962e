/**
 * Sliding window log (000 §1.3): one timestamped entry per admitted unit, so the
 * count over any span (now − windowMs, now] is exact — at the price of memory
 * proportional to the limit (RL-07). In Redis the log is a sorted set scored by
 * time; each unit needs a unique member, `<requestId>:<unit index>`, so the caller
 * passes a unique request id.
 *
 * Mirrored by src/store/scripts/sliding-window-log-n.lua.
 */
import type { Algorithm, Decision, SlidingWindowLogLimit, StoredState } from "./algorithm.ts";
import { validateCall, validateRequestId } from "./algorithm.ts";

export interface SlidingWindowLogEntry {
  /** `<requestId>:<unit index>`: unique per admitted unit. */
  readonly member: string;
  readonly tsMs: number;
}

export interface SlidingWindowLogState {
  /** Sorted as Redis sorts a zset: by tsMs, then member bytes. */
  readonly entries: readonly SlidingWindowLogEntry[];
}

function byScoreThenMember(a: SlidingWindowLogEntry, b: SlidingWindowLogEntry): number {
  if (a.tsMs !== b.tsMs) return a.tsMs - b.tsMs;
  return a.member < b.member ? -1 : a.member > b.member ? 1 : 0;
}

/** Entries still inside (now − windowMs, now]; a clock that stepped back keeps "future" ones (RL-05). */
function liveEntries(state: SlidingWindowLogState | undefined, nowMs: number, windowMs: number) {
  return (state?.entries ?? []).filter((entry) => entry.tsMs > nowMs - windowMs);
}

function membersOf(requestId: string, cost: number): string[] {
  return Array.from({ length: cost }, (_, unit) => `${requestId}:${unit}`);
}

/** Ms until the newest live entry leaves the window: the log is empty again then. */
function untilEmptyMs(live: readonly SlidingWindowLogEntry[], nowMs: number, windowMs: number): number {
  const newest = live.at(-1);
  return newest === undefined ? 0 : newest.tsMs + windowMs - nowMs;
}

/**
 * Admits `cost` units (one entry each) if the window holds fewer than limit − cost.
 *
 * @example
 * const limit = { algorithm: "sliding-window-log", limit: 2, windowMs: 1_000 } as const;
 * let d = decideSlidingWindowLog(undefined, 0, limit, 1, "req-a");
 * d = decideSlidingWindowLog(d.state, 400, limit, 1, "req-b");
 * decideSlidingWindowLog(d.state, 500, limit, 1, "req-c"); // refused, retryAfterMs 500 (req-a leaves at 1000)
 */
function decideSlidingWindowLog(
  state: SlidingWindowLogState | undefined,
  nowMs: number,
  limit: SlidingWindowLogLimit,
  cost: number,
  requestId?: string,
): Decision<SlidingWindowLogState> {
  validateCall(limit, nowMs, cost);
  const id = validateRequestId(requestId);
  const live = liveEntries(state, nowMs, limit.windowMs);
  if (live.length + cost > limit.limit) {
    // The (live + cost − limit)-th oldest entry must leave the window before `cost` more fit.
    const mustLeave = live[live.length + cost - limit.limit - 1]!;
    return {
      state: state ?? { entries: [] },
      allowed: false,
      remaining: Math.max(0, limit.limit - live.length),
      retryAfterMs: mustLeave.tsMs + limit.windowMs - nowMs,
      resetMs: untilEmptyMs(live, nowMs, limit.windowMs),
      delayMs: 0,
      ttlMs: Math.max(1, untilEmptyMs(live, nowMs, limit.windowMs)),
    };
  }
  const members = membersOf(id, cost);
  const taken = new Set(live.map((entry) => entry.member));
  if (members.some((member) => taken.has(member))) {
    // A reused id would overwrite its own entry (ZADD) and undercount: refuse the bug loudly.
    throw new RangeError(
      `requestId ${JSON.stringify(id)} is already in the log; pass a unique id per request`,
    );
  }
  const added = members.map((member) => ({ member, tsMs: nowMs }));
  const entries = [...live, ...added].sort(byScoreThenMember);
  const untilEmpty = untilEmptyMs(entries, nowMs, limit.windowMs);
  return {
    state: { entries },
    allowed: true,
    remaining: limit.limit - entries.length,
    retryAfterMs: 0,
    resetMs: untilEmpty,
    delayMs: 0,
    ttlMs: untilEmpty,
  };
}

/**
 * Removes the entries this request added (and the expired ones): compensates a spend
 * another limit of the same request refused.
 *
 * @example
 * const limit = { algorithm: "sliding-window-log", limit: 2, windowMs: 1_000 } as const;
 * const spent = decideSlidingWindowLog(undefined, 0, limit, 1, "req-a").state;
 * refundSlidingWindowLog(spent, 0, limit, 1, "req-a"); // { entries: [] }
 */
function refundSlidingWindowLog(
  state: SlidingWindowLogState | undefined,
  nowMs: number,
  limit: SlidingWindowLogLimit,
  cost: number,
  requestId?: string,
): SlidingWindowLogState {
  validateCall(limit, nowMs, cost);
  const members = new Set(membersOf(validateRequestId(requestId), cost));
  const entries = liveEntries(state, nowMs, limit.windowMs).filter((entry) => !members.has(entry.member));
  return { entries };
}

/**
 * The key lives until its newest entry leaves the window (an empty log is no key at all).
 *
 * @example
 * slidingWindowLogTtlMs({ entries: [{ member: "r:0", tsMs: 400 }] }, 500, { algorithm: "sliding-window-log", limit: 2, windowMs: 1_000 }); // 900
 */
function slidingWindowLogTtlMs(
  state: SlidingWindowLogState,
  nowMs: number,
  limit: SlidingWindowLogLimit,
): number {
  return Math.max(1, untilEmptyMs(liveEntries(state, nowMs, limit.windowMs), nowMs, limit.windowMs));
}

/**
 * The Redis sorted set of a log: member → score (tsMs).
 *
 * @example
 * slidingWindowLogToStored({ entries: [{ member: "r:0", tsMs: 400 }] }); // { kind: "zset", entries: [{ member: "r:0", score: "400" }] }
 */
function slidingWindowLogToStored(state: SlidingWindowLogState): StoredState {
  return {
    kind: "zset",
    entries: state.entries.map((entry) => ({ member: entry.member, score: String(entry.tsMs) })),
  };
}

/**
 * Reads a log back from ZRANGE … WITHSCORES (undefined when the key is absent).
 *
 * @example
 * slidingWindowLogFromStored({ kind: "zset", entries: [{ member: "r:0", score: "400" }] }); // { entries: [{ member: "r:0", tsMs: 400 }] }
 */
function slidingWindowLogFromStored(stored: StoredState): SlidingWindowLogState | undefined {
  if (stored.kind !== "zset") throw new Error(`a sliding log is stored as a zset, got a ${stored.kind}`);
  if (stored.entries.length === 0) return undefined;
  const entries = stored.entries.map(({ member, score }) => {
    const tsMs = Number(score);
    if (!Number.isSafeInteger(tsMs))
      throw new Error(`stored score of ${member} is not a safe integer: ${score}`);
    return { member, tsMs };
  });
  return { entries: entries.sort(byScoreThenMember) };
}

/**
 * This key's ARGV slice for sliding-window-log-n.lua: limit, windowMs, cost, requestId.
 *
 * @example
 * slidingWindowLogScriptArgs({ algorithm: "sliding-window-log", limit: 100, windowMs: 60_000 }, 1, "r1"); // ["100", "60000", "1", "r1"]
 */
function slidingWindowLogScriptArgs(
  limit: SlidingWindowLogLimit,
  cost: number,
  requestId?: string,
): string[] {
  return [String(limit.limit), String(limit.windowMs), String(cost), validateRequestId(requestId)];
}

/** sliding-window-log as the one object the registry (`algorithms.ts`) and the stores use. */
export const slidingWindowLog: Algorithm<SlidingWindowLogLimit, SlidingWindowLogState> = {
  name: "sliding-window-log",
  scriptName: "sliding-window-log-n.lua",
  argvStride: 4,
  decide: decideSlidingWindowLog,
  refund: refundSlidingWindowLog,
  ttlMs: slidingWindowLogTtlMs,
  toStored: slidingWindowLogToStored,
  fromStored: slidingWindowLogFromStored,
  scriptArgs: slidingWindowLogScriptArgs,
};
