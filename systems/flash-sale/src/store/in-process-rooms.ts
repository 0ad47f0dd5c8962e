/**
 * The waiting rooms in this process's memory (the default, one replica): `WaitingRoom` per
 * sale, the entrants' secret bindings beside it, time from the injected clock. Bounded by
 * `maxRooms` sales; past it a new sale's room is refused (ROOM_FULL).
 *
 * @example
 * const rooms = new InProcessRooms({ config, clock, random, maxRooms: 100 });
 * await rooms.join({ saleId: "s1", opensAtMs: 0 }, "u1", { binding, draw: 0.5 });
 */
import type { Clock } from "@casebook/kit/clock";
import type { RandomSource } from "@casebook/kit/random";
import type { AdmitOutcome, JoinOutcome, RoomPort, RoomSale } from "../domain/room-port.ts";
import { WaitingRoom, type WaitingRoomConfig } from "../domain/waiting-room.ts";
import { errors } from "../errors.ts";

interface Room {
  readonly room: WaitingRoom;
  readonly bindings: Map<string, string>;
}

export class InProcessRooms implements RoomPort {
  readonly #o: { config: WaitingRoomConfig; clock: Clock; random: RandomSource; maxRooms: number };
  readonly #rooms = new Map<string, Room>();

  constructor(options: { config: WaitingRoomConfig; clock: Clock; random: RandomSource; maxRooms: number }) {
    this.#o = options;
  }

  async join(sale: RoomSale, entrant: string, input: { binding: string }): Promise<JoinOutcome> {
    const r = this.#room(sale);
    const joined = r.room.join(entrant, this.#o.clock.nowMs());
    if (joined.kind === "full") return { kind: "full", enrolled: false };
    const enrolled = !r.bindings.has(entrant);
    if (enrolled) r.bindings.set(entrant, input.binding);
    return { ...joined, enrolled };
  }

  async tick(sale: RoomSale): Promise<number> {
    return this.#room(sale).room.tick(this.#o.clock.nowMs());
  }

  async admit(sale: RoomSale, entrant: string, binding: string): Promise<AdmitOutcome> {
    const r = this.#room(sale);
    const kept = r.bindings.get(entrant);
    if (kept === undefined) return { kind: "unknown" };
    if (kept !== binding) return { kind: "wrong-secret" };
    return r.room.admit(entrant, this.#o.clock.nowMs());
  }

  async heartbeat(sale: RoomSale, entrant: string): Promise<boolean> {
    return this.#room(sale).room.heartbeat(entrant, this.#o.clock.nowMs());
  }

  async leave(sale: RoomSale, entrant: string): Promise<void> {
    this.#room(sale).room.leave(entrant);
  }

  async status(sale: RoomSale) {
    return this.#room(sale).room.status();
  }

  /** The sale's room, made on first use and opened once its time has come. */
  #room(sale: RoomSale): Room {
    let r = this.#rooms.get(sale.saleId);
    if (r === undefined) {
      if (this.#rooms.size >= this.#o.maxRooms) {
        throw errors.create("ROOM_FULL", { fields: { saleId: sale.saleId } });
      }
      r = { room: new WaitingRoom(this.#o.config, this.#o.random), bindings: new Map() };
      this.#rooms.set(sale.saleId, r);
    }
    const nowMs = this.#o.clock.nowMs();
    if (nowMs >= sale.opensAtMs && !r.room.status().open) r.room.open(nowMs);
    return r;
  }
}
