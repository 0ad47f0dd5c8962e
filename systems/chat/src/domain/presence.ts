/**
 * Presence, derived from the session table (CH-16): a user is online while at least one of
 * their devices has a session row that has not expired. Nothing else is kept, and nothing
 * is written to PostgreSQL: the row is written at connect with a TTL of three heartbeats and
 * renewed by each heartbeat tick, removed at disconnect (best effort). So a clean disconnect
 * shows offline at once, and the users of a gateway that dies — SIGKILL, a lost machine,
 * nobody left to remove anything — show offline within the session TTL (3 × CHAT_HEARTBEAT_MS:
 * 90 s by default), because reads ignore expired rows.
 *
 * Asked for per conversation (its members, ≤ 1,024: never a channel), on the API or the socket;
 * and pushed to a socket that watches the conversation (`presence {chatId, watch: true}`,
 * gateway/presence-watch.ts): a gateway pokes a user's presence channel when it opens or closes
 * one of the user's sockets, and the gateways watching that user read the table again and push
 * what changed. Pub/sub may lose a poke and a SIGKILLed gateway pokes nothing, so each watching
 * gateway also re-reads its watched users once per heartbeat: a change is pushed at once on a
 * clean connect or disconnect, within a heartbeat after a lost poke, and within the session TTL
 * plus a heartbeat after a gateway dies.
 *
 * @example
 * presenceOf(["ana", "bruno"], await sessions.lookup(["ana", "bruno"], nowMs));
 * // [{ userId: "ana", online: true, devices: ["phone"] }, { userId: "bruno", online: false, devices: [] }]
 */
import type { SessionRow } from "./sessions.ts";

export interface UserPresence {
  readonly userId: string;
  readonly online: boolean;
  /** The devices with a live socket, sorted. */
  readonly devices: string[];
}

/**
 * Who might have changed: a poke names a user, never a state — the watchers read the session
 * table after it, so a poke can be late, doubled or out of order and what they push is still
 * the table's latest. Redis pub/sub (`store/redis-presence-bus.ts`) or in process.
 */
export interface PresenceBus {
  /** Tells the gateways watching `userId` that one of its sockets opened or closed. */
  poke(userId: string): Promise<void>;
  /** `listener` hears the pokes of these users from when this resolves (confirmed). */
  listen(listener: PresenceListener, userIds: readonly string[]): Promise<void>;
  /** `listener` stops hearing these users. */
  unlisten(listener: PresenceListener, userIds: readonly string[]): Promise<void>;
}

export type PresenceListener = (userId: string) => void;

/** The presence of `userIds` given their live session rows (expired ones already ignored). */
export function presenceOf(userIds: readonly string[], liveRows: readonly SessionRow[]): UserPresence[] {
  const devices = new Map<string, Set<string>>();
  for (const row of liveRows) {
    const set = devices.get(row.userId) ?? new Set<string>();
    set.add(row.deviceId);
    devices.set(row.userId, set);
  }
  return userIds.map((userId) => {
    const live = [...(devices.get(userId) ?? [])].sort();
    return { userId, online: live.length > 0, devices: live };
  });
}
