/**
 * Presence, derived from the session table (CH-16): a user is online while at least one of
 * their devices has a session row that has not expired. Nothing else is kept, and nothing
 * is written to PostgreSQL: the row is written at connect with a TTL of three heartbeats and
 * renewed by each heartbeat tick, removed at disconnect (best effort). So a clean disconnect
 * shows offline at once, and the users of a gateway that dies — SIGKILL, a lost machine,
 * nobody left to remove anything — show offline within the session TTL (3 × CHAT_HEARTBEAT_MS:
 * 90 s by default), because reads ignore expired rows.
 *
 * Asked for per conversation (its members, ≤ 1,024: never a channel), on the API or the socket.
 * Presence is read when asked, not pushed on every change.
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
