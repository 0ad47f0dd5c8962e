/**
 * The session table in Redis (CH-15, CH-16, CH-23): a hash per user, `<prefix>sess:<user>`,
 * one field per connection (`<device>:<connection>`), the row as JSON with its own
 * `expiresAtMs`. The key gets a TTL at least as long as its longest row (PEXPIRE NX, then GT,
 * in one MULTI), so a user whose gateways all died leaves nothing behind. A field per
 * connection, not per device, makes `remove` exact without a compare-and-delete: the
 * disconnect of an old connection can never delete the row of the device's newer one.
 * Reads ignore expired rows and delete them on the way (best effort, like any cleanup here).
 *
 * @example
 * const sessions = new RedisSessions(redis, "chat:");
 */
import type { Redis } from "ioredis";
import { liveRows, type SessionRow, type SessionTable } from "../domain/sessions.ts";

export class RedisSessions implements SessionTable {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nowMs: () => number;

  constructor(redis: Redis, prefix: string, nowMs: () => number = Date.now) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#nowMs = nowMs;
  }

  #key(userId: string): string {
    return `${this.#prefix}sess:${userId}`;
  }

  async put(row: SessionRow): Promise<void> {
    const key = this.#key(row.userId);
    const ttlMs = Math.max(1, Math.ceil(row.expiresAtMs - this.#nowMs()));
    await this.#redis
      .multi()
      .hset(key, `${row.deviceId}:${row.connectionId}`, JSON.stringify(row))
      .pexpire(key, ttlMs, "NX")
      .pexpire(key, ttlMs, "GT")
      .exec();
  }

  async remove(userId: string, deviceId: string, connectionId: string): Promise<void> {
    await this.#redis.hdel(this.#key(userId), `${deviceId}:${connectionId}`);
  }

  async lookup(userIds: readonly string[], nowMs: number): Promise<SessionRow[]> {
    const users = [...new Set(userIds)];
    if (users.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const userId of users) pipeline.hgetall(this.#key(userId));
    const replies = (await pipeline.exec()) ?? [];
    const found: SessionRow[] = [];
    const expired: [string, string][] = [];
    replies.forEach(([err, fields], i) => {
      if (err) throw err;
      for (const [field, json] of Object.entries(fields as Record<string, string>)) {
        const row = JSON.parse(json) as SessionRow;
        if (row.expiresAtMs > nowMs) found.push(row);
        else expired.push([this.#key(users[i]!), field]);
      }
    });
    if (expired.length > 0) {
      const cleanup = this.#redis.pipeline();
      for (const [key, field] of expired) cleanup.hdel(key, field);
      // Best effort: a failed cleanup leaves rows that the next read ignores again.
      cleanup.exec().catch(() => {});
    }
    return liveRows(found, nowMs);
  }
}
