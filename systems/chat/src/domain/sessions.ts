/**
 * The session table (CH-04, CH-15, CH-16, CH-25): one row per (user, device) saying which
 * gateway and connection hold that device's socket, written at connect with a TTL and
 * renewed by the heartbeat. Disconnect removes the row, best effort; a gateway that dies
 * removes nothing, so the TTL is the safety net — and since an engine deletes expired rows
 * late (DynamoDB: within days; Redis: lazily), readers filter rows whose `expiresAtMs`
 * passed instead of trusting deletion. Implemented in Redis (`store/redis-sessions.ts`) and
 * in-process (`store/memory-sessions.ts`), one contract suite for both.
 *
 * @example
 * await sessions.put({ userId: "ana", deviceId: "phone", gatewayId: "gw-1", connectionId: "c7", expiresAtMs });
 * const live = await sessions.lookup(["ana", "bruno"], clock.nowMs()); // rows not expired
 */
export interface SessionRow {
  readonly userId: string;
  readonly deviceId: string;
  readonly gatewayId: string;
  readonly connectionId: string;
  readonly expiresAtMs: number;
}

export interface SessionTable {
  /** Writes (or replaces) the device's row. */
  put(row: SessionRow): Promise<void>;
  /** Removes the row if it still names this connection (a newer connection of the device stays). */
  remove(userId: string, deviceId: string, connectionId: string): Promise<void>;
  /** The live rows of these users, expired ones ignored (CH-16). */
  lookup(userIds: readonly string[], nowMs: number): Promise<SessionRow[]>;
}

/** Keeps the rows of `rows` that have not expired at `nowMs`. */
export function liveRows(rows: Iterable<SessionRow>, nowMs: number): SessionRow[] {
  const live: SessionRow[] = [];
  for (const row of rows) if (row.expiresAtMs > nowMs) live.push(row);
  return live;
}
