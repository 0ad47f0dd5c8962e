/**
 * Token and request budgets counted in fixed windows (LG-05/06/07), the arithmetic both the
 * Redis scripts (`store/scripts/budget-*.lua`) and their in-process twins run. One limit is
 * `{ windowId, used }`: what was reserved (and settled) in the current window.
 *
 * - **reserve** (LG-06/07): all lines of a request at once — every limit has room for its
 *   cost, or nothing is written and the refusal says when the tightest one will have room
 *   (Retry-After: the window end, or later while debt is being paid off; "never" when the
 *   cost alone is above the limit). Because the debit is the reservation, not the usage,
 *   concurrent requests never admit more than the limit between them.
 * - **settle**: the provider's count replaces the reservation. In the reservation's own
 *   window the difference goes back (or is charged); once that window is over, a refund is
 *   dropped (the window it would have freed is gone) and an excess is charged now.
 * - **debt**: usage can exceed the limit (a tokenizer that under-counts, a model with no
 *   matching tokenizer, the settle of a request reserved before the window turned). A new
 *   window starts with the old one's overage: `used' = max(0, used − limit × windows passed)`.
 *   The bound this gives: over any N consecutive windows the tokens charged are at most
 *   N × limit + D, where D is the debt still owed at the end — never more than the excesses
 *   settled in the last window. Usage is never forgiven, only spread.
 *
 * @example
 * const r = reserveAll([undefined], [{ limit: 6_000, cost: 6_000 }], { nowMs: 0, windowMs: 60_000 });
 * r.allowed; // true — and a second call with the state it wrote is refused until 60_000 ms
 */

export interface WindowState {
  readonly windowId: number;
  readonly used: number;
}

export interface LimitLine {
  /** Units per window (tokens or requests). */
  readonly limit: number;
  /** Units this request reserves. */
  readonly cost: number;
}

export interface ReserveDecision {
  readonly allowed: boolean;
  readonly windowId: number;
  /** 0 when allowed; -1 when a cost is above its limit (it will never fit); else ms until all fit. */
  readonly retryAfterMs: number;
  /** 1-based index of the line that decided the refusal; 0 when allowed. */
  readonly refusedLine: number;
  /** The states to write (only when allowed). */
  readonly next: readonly WindowState[];
}

/** The state as window `windowId` sees it: overage of past windows carried as debt. */
export function rollTo(state: WindowState | undefined, windowId: number, limit: number): number {
  if (state === undefined || state.windowId > windowId) return 0;
  const passed = windowId - state.windowId;
  return Math.max(0, state.used - limit * passed);
}

/** Ms until `used + cost` fits `limit`: the end of the windows that must pass; -1 for never. */
export function waitMs(
  used: number,
  line: LimitLine,
  windowId: number,
  nowMs: number,
  windowMs: number,
): number {
  if (line.cost > line.limit) return -1;
  const windows = Math.ceil((used + line.cost - line.limit) / line.limit);
  return (windowId + windows) * windowMs - nowMs;
}

/** How long a limit's state must live: its window, the next (a settle may land there), and its debt's. */
export function ttlMs(used: number, limit: number, windowMs: number): number {
  return windowMs * (2 + Math.floor(used / limit));
}

export function reserveAll(
  states: readonly (WindowState | undefined)[],
  lines: readonly LimitLine[],
  clock: { nowMs: number; windowMs: number },
): ReserveDecision {
  const windowId = Math.floor(clock.nowMs / clock.windowMs);
  let retryAfterMs = 0;
  let refusedLine = 0;
  const next: WindowState[] = [];
  lines.forEach((line, i) => {
    const used = rollTo(states[i], windowId, line.limit);
    next.push({ windowId, used: used + line.cost });
    if (used + line.cost <= line.limit) return;
    const wait = waitMs(used, line, windowId, clock.nowMs, clock.windowMs);
    // "never" decides over any wait; otherwise the longest wait does.
    if (refusedLine === 0 || wait === -1 || (retryAfterMs !== -1 && wait > retryAfterMs)) {
      retryAfterMs = wait;
      refusedLine = i + 1;
    }
  });
  if (refusedLine > 0) return { allowed: false, windowId, retryAfterMs, refusedLine, next: [] };
  return { allowed: true, windowId, retryAfterMs: 0, refusedLine: 0, next };
}

/** One limit after a settle of `delta` (usage − reservation) for a reservation made in `reservedWindowId`. */
export function settleOne(
  state: WindowState | undefined,
  line: { limit: number; delta: number },
  clock: { nowMs: number; windowMs: number; reservedWindowId: number },
): WindowState {
  const windowId = Math.floor(clock.nowMs / clock.windowMs);
  const used = rollTo(state, windowId, line.limit);
  if (clock.reservedWindowId === windowId) return { windowId, used: Math.max(0, used + line.delta) };
  return { windowId, used: used + Math.max(0, line.delta) };
}
