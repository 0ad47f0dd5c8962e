/**
 * What the API and the ticker need of a waiting room (FS-13, FS-20), whoever keeps it: the
 * in-process rooms (one replica; `WaitingRoom` itself, the default) or Redis (every replica
 * shares one room per sale: the room scripts). One contract suite runs both
 * (`test/room-store.contract.test.ts`).
 *
 * The entrant's secret is kept with its position as a binding (a hash), so any replica can
 * check it: `join` keeps the first binding it is given, `admit` compares.
 */
import type { AdmitResult, JoinResult, RoomStatus } from "./waiting-room.ts";

export interface RoomSale {
  readonly saleId: string;
  /** The room opens (the pre-queue is drawn) at the first call at or after this time. */
  readonly opensAtMs: number;
}

/** A join's answer, and whether this join enrolled the binding it brought (the first one). */
export type JoinOutcome =
  | (Exclude<JoinResult, { kind: "full" }> & { enrolled: boolean })
  | { kind: "full"; enrolled: false };

/** `admit`'s answers, plus a secret that does not match the one kept at join. */
export type AdmitOutcome = AdmitResult | { kind: "wrong-secret" };

export interface RoomPort {
  /** One position per user; `draw` in [0, 1) orders the pre-queue at the opening. */
  join(sale: RoomSale, entrant: string, input: { binding: string; draw: number }): Promise<JoinOutcome>;
  /** Frees silent and expired slots, admits the next batch; how many it admitted. */
  tick(sale: RoomSale): Promise<number>;
  /** The entrant's turn, checked against its secret's binding; a sign of life when admitted. */
  admit(sale: RoomSale, entrant: string, binding: string): Promise<AdmitOutcome>;
  /** A sign of life from an admitted entrant; false when its slot is gone. */
  heartbeat(sale: RoomSale, entrant: string): Promise<boolean>;
  /** Bought or nothing left: the slot is free at once. */
  leave(sale: RoomSale, entrant: string): Promise<void>;
  status(sale: RoomSale): Promise<RoomStatus>;
}
