/**
 * The sales whose waiting rooms this replica serves, and the loop that moves them: each round
 * ticks every known sale's room through the room port (frees silent slots, admits the next
 * batch; the room opens itself at its time). On kit's BackgroundLoop. With Redis rooms every
 * replica may tick the same room: the scripts earn admission credit from the stored last
 * tick, so more tickers never admit faster.
 *
 * @example
 * const rooms = new RoomTicker({ port, opensAtMsOf, idleMs: 250, maxRooms: 100 });
 * rooms.start();
 * const sale = await rooms.sale("s1");
 * if (sale) await rooms.port.join(sale, "u1", { binding, draw: Math.random() });
 */
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { systemRandom } from "@casebook/kit/random";
import type { RoomPort, RoomSale } from "../domain/room-port.ts";

export interface RoomTickerOptions {
  port: RoomPort;
  /** The sale's opening time, or undefined when no such sale exists. */
  opensAtMsOf: (saleId: string) => Promise<number | undefined>;
  /** Pause between ticks. */
  idleMs: number;
  /** Sales kept at most (the most recent ones). */
  maxRooms: number;
  onError?: (error: unknown) => void;
}

export class RoomTicker {
  readonly #o: RoomTickerOptions;
  readonly #sales = new Map<string, RoomSale>();
  readonly #loop: BackgroundLoop;

  constructor(options: RoomTickerOptions) {
    this.#o = options;
    this.#loop = new BackgroundLoop({
      name: "waiting room ticker",
      round: async () => {
        await this.tickAll();
        return false;
      },
      idleMs: options.idleMs,
      failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
      onError: (error) => options.onError?.(error),
    });
  }

  get port(): RoomPort {
    return this.#o.port;
  }

  /** The sale's room, or undefined for an unknown sale (or more sales than `maxRooms`). */
  async sale(saleId: string): Promise<RoomSale | undefined> {
    const known = this.#sales.get(saleId);
    if (known !== undefined) return known;
    const opensAtMs = await this.#o.opensAtMsOf(saleId);
    if (opensAtMs === undefined || this.#sales.size >= this.#o.maxRooms) return undefined;
    const sale = this.#sales.get(saleId) ?? { saleId, opensAtMs };
    this.#sales.set(saleId, sale);
    return sale;
  }

  async tickAll(): Promise<void> {
    for (const sale of this.#sales.values()) await this.#o.port.tick(sale);
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }
}
