/**
 * The waiting room of one sale (FS-13, FS-20), as pure state: no I/O, time passed in,
 * randomness injected. Its shape follows the anchors the issue names:
 *
 * - **pre-queue** (Queue-it): whoever joins before the sale opens waits unnumbered; at the
 *   opening they get positions 1..k in a random order, so arriving early gives no edge over
 *   arriving at the same early time; after the opening, positions are FIFO (a counter).
 * - **one position per user**: joining again returns the same position.
 * - **"serving up to P"** (AWS VWR): one global number every page polls (cacheable); an
 *   entrant whose position ≤ P may fetch its admission (the signed token, made by the API).
 * - **admission in batches at a rate, capped by active checkouts** (Cloudflare's
 *   `new_users_per_minute`, `total_active_users`): each `tick` advances P by what the rate
 *   allows since the last tick, never past `maxActive` admitted-and-live entrants.
 * - **no leaked capacity** (what AWS VWR's users hit: abandoned entrants counted active
 *   forever): an admitted entrant holds a slot only while it shows signs of life — fetching
 *   its admission within `graceMs` of being admitted, then a heartbeat (any checkout call)
 *   at least every `graceMs`, and never past `sessionMs` in all; `leave` (bought, gave up)
 *   frees it at once. Every slot therefore frees itself within a bounded time.
 * - **position and estimated wait** (FS-20): how many are ahead and, at the configured rate,
 *   how long that is.
 *
 * Bounds: `maxEntrants` entrants in all (a full room refuses joins with `full`).
 *
 * @example
 * const room = new WaitingRoom({ admitPerS: 50, maxActive: 200, graceMs: 30_000, sessionMs: 600_000, maxEntrants: 1_000_000 }, random);
 * room.join("u1", t0);            // { kind: "pre-queue" } before open
 * room.open(t1);                  // positions drawn at random
 * room.tick(t1 + 1_000);          // P advances by up to 50
 * room.admit("u1", t1 + 1_000);   // { kind: "admitted", position } → the API signs a token
 */
import type { RandomSource } from "@casebook/kit/random";
import { shuffle } from "@casebook/kit/random";

export interface WaitingRoomConfig {
  /** Positions admitted per second (the checkout's capacity, with headroom). */
  readonly admitPerS: number;
  /** Admitted entrants live at once, at most: checkout never holds more. */
  readonly maxActive: number;
  /** Silence after which an admitted entrant's slot is freed (disconnect grace). */
  readonly graceMs: number;
  /** Longest an admitted entrant holds a slot, whatever it does. */
  readonly sessionMs: number;
  /** Entrants the room keeps at most. */
  readonly maxEntrants: number;
  /**
   * Admission credit kept across a late tick, in ms of the rate. Unset: up to `maxActive`
   * (a slow tick loses nothing, and the tick after a lag admits the backlog at once). Set, a
   * late tick loses what it earned past this: the room then admits less under load, never a
   * burst above its rate — checkout gets at most admitPerS · (w + carryMs/1000) + 1 in any w s.
   */
  readonly carryMs?: number;
}

/** The most credit the room keeps between ticks (see `carryMs`). */
export function creditCap(config: WaitingRoomConfig): number {
  if (config.carryMs === undefined) return config.maxActive;
  return Math.min(config.maxActive, Math.max(1, (config.admitPerS * config.carryMs) / 1_000));
}

interface Active {
  readonly position: number;
  readonly admittedAtMs: number;
  lastSeenMs: number;
}

export type JoinResult =
  | { kind: "pre-queue"; waiting: number }
  | { kind: "queued"; position: number }
  | { kind: "full" };

export type AdmitResult =
  | { kind: "admitted"; position: number; sessionEndsAtMs: number }
  | { kind: "waiting"; position: number; ahead: number; estimatedWaitMs: number }
  | { kind: "pre-queue"; waiting: number }
  /** Admitted once, and its slot ended (silence, session over, or left): join again. */
  | { kind: "expired" }
  | { kind: "unknown" };

export interface RoomStatus {
  readonly open: boolean;
  readonly servingUpTo: number;
  readonly lastPosition: number;
  readonly active: number;
  readonly waiting: number;
}

export class WaitingRoom {
  readonly #config: WaitingRoomConfig;
  readonly #random: RandomSource;
  #open = false;
  readonly #preQueue: string[] = [];
  readonly #preQueued = new Set<string>();
  readonly #positions = new Map<string, number>();
  /** Entrant at position p is #byPosition[p - 1]. */
  readonly #byPosition: string[] = [];
  #lastPosition = 0;
  #servingUpTo = 0;
  /** Fractional admissions carried between ticks, so a slow tick rate loses nothing. */
  #credit = 0;
  #lastTickMs: number | undefined;
  readonly #active = new Map<string, Active>();
  /** Entrants whose slot ended: they cannot come back on the same position. */
  readonly #ended = new Set<string>();

  constructor(config: WaitingRoomConfig, random: RandomSource) {
    if (
      !(
        config.admitPerS > 0 &&
        config.maxActive >= 1 &&
        config.graceMs >= 1 &&
        config.sessionMs >= config.graceMs
      )
    ) {
      throw new RangeError("admitPerS > 0, maxActive >= 1, graceMs >= 1, sessionMs >= graceMs");
    }
    this.#config = config;
    this.#random = random;
  }

  /** One position per user: a second join returns the first one's answer. */
  join(entrant: string, _nowMs: number): JoinResult {
    const position = this.#positions.get(entrant);
    if (position !== undefined) return { kind: "queued", position };
    if (this.#preQueued.has(entrant)) return { kind: "pre-queue", waiting: this.#preQueue.length };
    if (this.#positions.size + this.#preQueue.length >= this.#config.maxEntrants) return { kind: "full" };
    if (!this.#open) {
      this.#preQueue.push(entrant);
      this.#preQueued.add(entrant);
      return { kind: "pre-queue", waiting: this.#preQueue.length };
    }
    return { kind: "queued", position: this.#place(entrant) };
  }

  /** The sale opens: the pre-queue gets positions 1..k in a random order (Queue-it's randomised start). */
  open(nowMs: number): void {
    if (this.#open) return;
    this.#open = true;
    for (const entrant of shuffle(this.#random, [...this.#preQueue])) this.#place(entrant);
    this.#preQueue.length = 0;
    this.#preQueued.clear();
    this.#lastTickMs = nowMs;
  }

  /**
   * Frees the slots of the silent and the expired, then advances P by what the rate earned
   * since the last tick, within the cap on active entrants. Returns how many were admitted.
   */
  tick(nowMs: number): number {
    if (!this.#open) return 0;
    this.#expire(nowMs);
    const elapsedMs = Math.max(0, nowMs - (this.#lastTickMs ?? nowMs));
    this.#lastTickMs = nowMs;
    this.#credit = Math.min(
      this.#credit + (elapsedMs * this.#config.admitPerS) / 1000,
      creditCap(this.#config),
    );
    const room = this.#config.maxActive - this.#active.size;
    const waiting = this.#lastPosition - this.#servingUpTo;
    const batch = Math.max(0, Math.min(Math.floor(this.#credit), room, waiting));
    this.#credit -= batch;
    const from = this.#servingUpTo;
    this.#servingUpTo += batch;
    // Entrants admitted by this batch hold a slot from now: counted active until they fetch
    // their admission within the grace, or lose it.
    for (let position = from + 1; position <= this.#servingUpTo; position++) {
      this.#active.set(this.#byPosition[position - 1]!, { position, admittedAtMs: nowMs, lastSeenMs: nowMs });
    }
    return batch;
  }

  /** The entrant asks for its turn: admitted (the API then signs a token), or where it stands. */
  admit(entrant: string, nowMs: number): AdmitResult {
    if (this.#preQueued.has(entrant)) return { kind: "pre-queue", waiting: this.#preQueue.length };
    const position = this.#positions.get(entrant);
    if (position === undefined) return { kind: "unknown" };
    if (this.#ended.has(entrant)) return { kind: "expired" };
    const active = this.#active.get(entrant);
    if (active !== undefined) {
      active.lastSeenMs = nowMs;
      return { kind: "admitted", position, sessionEndsAtMs: active.admittedAtMs + this.#config.sessionMs };
    }
    const ahead = Math.max(0, position - this.#servingUpTo - 1);
    return { kind: "waiting", position, ahead, estimatedWaitMs: this.estimatedWaitMs(position) };
  }

  /** A sign of life from an admitted entrant (any checkout call); false when its slot is gone. */
  heartbeat(entrant: string, nowMs: number): boolean {
    const active = this.#active.get(entrant);
    if (active === undefined) return false;
    active.lastSeenMs = nowMs;
    return true;
  }

  /** Bought or gave up: the slot is free at once. */
  leave(entrant: string): void {
    if (this.#active.delete(entrant)) this.#ended.add(entrant);
  }

  isActive(entrant: string): boolean {
    return this.#active.has(entrant);
  }

  /** At the configured rate, the time until `position` is served (0 once it is). */
  estimatedWaitMs(position: number): number {
    const ahead = Math.max(0, position - this.#servingUpTo);
    return Math.ceil((ahead / this.#config.admitPerS) * 1000);
  }

  status(): RoomStatus {
    return {
      open: this.#open,
      servingUpTo: this.#servingUpTo,
      lastPosition: this.#lastPosition,
      active: this.#active.size,
      waiting: this.#preQueue.length + Math.max(0, this.#lastPosition - this.#servingUpTo),
    };
  }

  #place(entrant: string): number {
    this.#lastPosition += 1;
    this.#positions.set(entrant, this.#lastPosition);
    this.#byPosition.push(entrant);
    return this.#lastPosition;
  }

  #expire(nowMs: number): void {
    const { graceMs, sessionMs } = this.#config;
    for (const [entrant, a] of this.#active) {
      if (nowMs - a.lastSeenMs > graceMs || nowMs - a.admittedAtMs >= sessionMs) {
        this.#active.delete(entrant);
        this.#ended.add(entrant);
      }
    }
  }
}
