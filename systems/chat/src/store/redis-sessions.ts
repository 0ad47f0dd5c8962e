/**
 * The session table in Redis (CH-15, CH-16, CH-23): a hash per user, `<prefix>sess:<user>`,
 * one field per connection (`<device>:<connection>`), the row as
 * `<expiresAtMs>|<gateway>|<connection>` (the user is the key, the device the field: a group
 * message reads 500 rows, and parsing JSON for each was the send service's largest cost after
 * GC; rows written as JSON by an earlier release, alive for one session TTL after a deploy, are
 * still read). The key gets a TTL at least as long as its longest row (PEXPIRE NX, then GT,
 * in one MULTI), so a user whose gateways all died leaves nothing behind. A field per
 * connection, not per device, makes `remove` exact without a compare-and-delete: the
 * disconnect of an old connection can never delete the row of the device's newer one.
 * Reads ignore expired rows and delete them on the way (best effort, like any cleanup here).
 *
 * @example
 * const sessions = new RedisSessions(redis, "chat:");
 */
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import type { Redis } from "ioredis";
import { liveRows, type SessionRow, type SessionTable } from "../domain/sessions.ts";

/** Where the session table's scripts live (`session-rows-n.lua`). */
export const sessionScriptsDir = new URL("./scripts/", import.meta.url);

export class RedisSessions implements SessionTable {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nowMs: () => number;
  /** Read once, at the first lookup; EVALSHA from then on (EVAL after a Redis restart). */
  #scripts: Promise<ScriptRegistry> | undefined;

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
      .hset(
        key,
        `${row.deviceId}:${row.connectionId}`,
        `${row.expiresAtMs}|${row.gatewayId}|${row.connectionId}`,
      )
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
    const keys = users.map((userId) => this.#key(userId));
    this.#scripts ??= ScriptRegistry.fromDir(sessionScriptsDir);
    const scripts = await this.#scripts.catch((err: unknown) => {
      this.#scripts = undefined; // a failed read is retried by the next lookup
      throw err;
    });
    const replies = (await scripts.run(this.#redis, "session-rows", keys, [])) as string[][];
    const found: SessionRow[] = [];
    const expired: [string, string][] = [];
    replies.forEach((flat, i) => {
      for (let at = 0; at + 1 < flat.length; at += 2) {
        const row = rowOf(users[i]!, flat[at]!, flat[at + 1]!);
        if (row.expiresAtMs > nowMs) found.push(row);
        else expired.push([keys[i]!, flat[at]!]);
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

/** A row from its user, its field (`<device>:<connection>`) and its value. */
function rowOf(userId: string, field: string, value: string): SessionRow {
  if (value.startsWith("{")) return JSON.parse(value) as SessionRow; // written by an earlier release
  const first = value.indexOf("|");
  const last = value.lastIndexOf("|");
  const connectionId = value.slice(last + 1);
  return {
    userId,
    deviceId: field.slice(0, field.length - connectionId.length - 1),
    gatewayId: value.slice(first + 1, last),
    connectionId,
    expiresAtMs: Number(value.slice(0, first)),
  };
}
