/**
 * The session table in process (the embedded twin of `redis-sessions.ts`): one gateway
 * process, or a test. Same rows, same expiry rule: reads ignore rows past `expiresAtMs`,
 * whether or not they were deleted.
 *
 * @example
 * const sessions = new MemorySessions();
 */
import { liveRows, type SessionRow, type SessionTable } from "../domain/sessions.ts";

/** Rows per user at most: a user with more devices than this loses the oldest rows. */
export const MAX_DEVICES_PER_USER = 64;

export class MemorySessions implements SessionTable {
  readonly #rows = new Map<string, Map<string, SessionRow>>();

  async put(row: SessionRow): Promise<void> {
    const rows = this.#rows.get(row.userId) ?? new Map<string, SessionRow>();
    rows.set(`${row.deviceId}:${row.connectionId}`, row);
    while (rows.size > MAX_DEVICES_PER_USER) rows.delete(rows.keys().next().value!);
    this.#rows.set(row.userId, rows);
  }

  async remove(userId: string, deviceId: string, connectionId: string): Promise<void> {
    const rows = this.#rows.get(userId);
    rows?.delete(`${deviceId}:${connectionId}`);
    if (rows?.size === 0) this.#rows.delete(userId);
  }

  async lookup(userIds: readonly string[], nowMs: number): Promise<SessionRow[]> {
    const found: SessionRow[] = [];
    for (const userId of new Set(userIds)) {
      const rows = this.#rows.get(userId);
      if (rows) found.push(...liveRows(rows.values(), nowMs));
    }
    return found;
  }
}
