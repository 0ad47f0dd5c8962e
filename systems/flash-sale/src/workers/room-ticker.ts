/**
 * The waiting rooms of this process, one per sale, and the loop that moves them: each round
 * opens the rooms whose sale has opened and ticks every room (frees silent slots, admits the
 * next batch). On kit's BackgroundLoop.
 *
 * The rooms live in this process's memory: one replica serves a sale's room. Keeping them in
 * Redis (so replicas share one room) is the next step, and the README says so.
 *
 * @example
 * const rooms = new RoomTicker({ config, clock, random, saleOf, idleMs: 250 });
 * rooms.start();
 * (await rooms.room("s1"))?.join("u1", clock.nowMs());
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { type RandomSource, systemRandom } from "@casebook/kit/random";
import { WaitingRoom, type WaitingRoomConfig } from "../domain/waiting-room.ts";

export interface RoomTickerOptions {
  config: WaitingRoomConfig;
  clock: Clock;
  random: RandomSource;
  /** The sale's opening time, or undefined when no such sale exists. */
  opensAtMsOf: (saleId: string) => Promise<number | undefined>;
  /** Pause between ticks. */
  idleMs: number;
  /** Rooms kept at most (one per sale). */
  maxRooms: number;
  onError?: (error: unknown) => void;
}

export class RoomTicker {
  readonly #o: RoomTickerOptions;
  readonly #rooms = new Map<string, { room: WaitingRoom; opensAtMs: number }>();
  readonly #loop: BackgroundLoop;

  constructor(options: RoomTickerOptions) {
    this.#o = options;
    this.#loop = new BackgroundLoop({
      name: "waiting room ticker",
      round: async () => {
        this.tickAll();
        return false;
      },
      idleMs: options.idleMs,
      failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
      onError: (error) => options.onError?.(error),
    });
  }

  /** The sale's room (made on first use), or undefined for an unknown sale or a full registry. */
  async room(saleId: string): Promise<WaitingRoom | undefined> {
    const known = this.#rooms.get(saleId);
    if (known !== undefined) return known.room;
    const opensAtMs = await this.#o.opensAtMsOf(saleId);
    if (opensAtMs === undefined || this.#rooms.size >= this.#o.maxRooms) return undefined;
    const again = this.#rooms.get(saleId); // another request made it while we read the sale
    if (again !== undefined) return again.room;
    const room = new WaitingRoom(this.#o.config, this.#o.random);
    this.#rooms.set(saleId, { room, opensAtMs });
    this.#openIfDue(room, opensAtMs, this.#o.clock.nowMs());
    return room;
  }

  tickAll(): void {
    const nowMs = this.#o.clock.nowMs();
    for (const { room, opensAtMs } of this.#rooms.values()) {
      this.#openIfDue(room, opensAtMs, nowMs);
      room.tick(nowMs);
    }
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  #openIfDue(room: WaitingRoom, opensAtMs: number, nowMs: number): void {
    if (nowMs >= opensAtMs && !room.status().open) room.open(nowMs);
  }
}
