/**
 * The waiting rooms in Redis (FS-13 across replicas): every replica runs the same room
 * scripts on one room per sale, so positions come from one atomic counter, "serving up to P"
 * is one number, the cap on active checkouts counts every replica's entrants, and any replica
 * may tick (the admission credit is earned from the stored last tick, never doubled). Each
 * script runs on Redis's clock (`TIME`), so replicas' clocks need not agree.
 *
 * Keys of one sale share a hash tag (`room:{saleId}:…`): one cluster slot.
 *
 * The opening draws the pre-queue in chunks of `openChunk` entrants per script call
 * (scripts/includes/room-keys.lua): at 100,000 entrants one call would hold Redis — every
 * sale's reservations with it — for the whole draw; in chunks each call is short, and the
 * calls every page makes anyway (status, admission, ticks) finish it.
 *
 * @example
 * const rooms = new RedisRooms(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(roomScriptsDir, { includesDir })), config);
 * await rooms.join({ saleId: "s1", opensAtMs: 0 }, "u1", { binding, draw: 0.5 });
 */
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { assert } from "@casebook/kit/assert";
import type { AdmitOutcome, JoinOutcome, RoomPort, RoomSale } from "../domain/room-port.ts";
import { creditCap, type RoomStatus, type WaitingRoomConfig } from "../domain/waiting-room.ts";

/** Where the room scripts live, and the includes they share with the stock scripts. */
export const roomScriptsDir = new URL("./room-scripts/", import.meta.url);
export const roomIncludesDir = new URL("./scripts/includes/", import.meta.url);

/** Entrants moved from the pre-queue to positions per script call at the opening: ~1 ms of Redis time. */
export const DEFAULT_ROOM_OPEN_CHUNK = 1_000;

export function roomKeys(saleId: string): string[] {
  const tag = `room:{${saleId}}`;
  return ["meta", "pos", "order", "pre", "active", "since", "ended", "secrets"].map((k) => `${tag}:${k}`);
}

function ints(reply: unknown, name: string): number[] {
  assert(Array.isArray(reply) && reply.every((v) => Number.isInteger(v)), `${name}: a list of integers`, {
    reply: String(reply),
  });
  return reply as number[];
}

export class RedisRooms implements RoomPort {
  readonly #runner: ScriptRunner;
  readonly #config: WaitingRoomConfig;
  readonly #openChunk: number;

  constructor(runner: ScriptRunner, config: WaitingRoomConfig, options: { openChunk?: number } = {}) {
    this.#runner = runner;
    this.#config = config;
    this.#openChunk = options.openChunk ?? DEFAULT_ROOM_OPEN_CHUNK;
    assert(Number.isInteger(this.#openChunk) && this.#openChunk >= 1, "openChunk: an integer ≥ 1", {
      openChunk: this.#openChunk,
    });
  }

  async join(
    sale: RoomSale,
    entrant: string,
    input: { binding: string; draw: number },
  ): Promise<JoinOutcome> {
    const [kind, n, enrolled] = ints(
      await this.#runner.run("room-join", roomKeys(sale.saleId), [
        entrant,
        input.binding,
        input.draw,
        sale.opensAtMs,
        this.#config.maxEntrants,
        this.#openChunk,
      ]),
      "room-join",
    );
    if (kind === 0) return { kind: "full", enrolled: false };
    if (kind === 2) return { kind: "pre-queue", waiting: n!, enrolled: enrolled === 1 };
    return { kind: "queued", position: n!, enrolled: enrolled === 1 };
  }

  async tick(sale: RoomSale): Promise<number> {
    const c = this.#config;
    const [admitted] = ints(
      await this.#runner.run("room-tick", roomKeys(sale.saleId), [
        sale.opensAtMs,
        c.admitPerS,
        c.maxActive,
        c.graceMs,
        c.sessionMs,
        this.#openChunk,
        creditCap(c),
      ]),
      "room-tick",
    );
    return admitted!;
  }

  async admit(sale: RoomSale, entrant: string, binding: string): Promise<AdmitOutcome> {
    const r = ints(
      await this.#runner.run("room-admit", roomKeys(sale.saleId), [
        entrant,
        sale.opensAtMs,
        this.#config.admitPerS,
        this.#config.sessionMs,
        binding,
        this.#openChunk,
      ]),
      "room-admit",
    );
    switch (r[0]) {
      case 1:
        return { kind: "admitted", position: r[1]!, sessionEndsAtMs: r[2]! };
      case 2:
        return { kind: "waiting", position: r[1]!, ahead: r[2]!, estimatedWaitMs: r[3]! };
      case 3:
        return { kind: "pre-queue", waiting: r[1]! };
      case 4:
        return { kind: "expired" };
      case 5:
        return { kind: "wrong-secret" };
      default:
        return { kind: "unknown" };
    }
  }

  async heartbeat(sale: RoomSale, entrant: string): Promise<boolean> {
    return (await this.#runner.run("room-touch", roomKeys(sale.saleId), [entrant, "heartbeat"])) === 1;
  }

  async leave(sale: RoomSale, entrant: string): Promise<void> {
    await this.#runner.run("room-touch", roomKeys(sale.saleId), [entrant, "leave"]);
  }

  async status(sale: RoomSale): Promise<RoomStatus> {
    const [open, servingUpTo, lastPosition, active, waiting] = ints(
      await this.#runner.run("room-status", roomKeys(sale.saleId), [sale.opensAtMs, this.#openChunk]),
      "room-status",
    );
    return {
      open: open === 1,
      servingUpTo: servingUpTo!,
      lastPosition: lastPosition!,
      active: active!,
      waiting: waiting!,
    };
  }
}
