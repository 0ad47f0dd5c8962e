/**
 * The shared counter on Redis when REDIS_URL is set (US-05, US-11): one key advanced by
 * `INCRBY key 1000`, atomic on the server, each call returning a distinct end. Redis
 * replicates it; a dead writer's block is a gap.
 *
 * The counter must stay in one engine for a store's life: on first use the Redis key is
 * started at the SQL counter's value with `SET NX` (so moving from PostgreSQL to Redis never
 * hands out a number twice); moving back the other way is not supported.
 *
 * @example
 * const counter = new RedisCounter(redis, "url-shortener:counter:links");
 * await counter.start(await new SqlCounter(db).current());
 * await counter.reserve(1_000);
 */
import type { RedisClient } from "@casebook/infra/redis/connect-redis";
import type { CounterPort } from "../domain/counter-blocks.ts";

export class RedisCounter implements CounterPort {
  readonly #redis: RedisClient;
  readonly #key: string;

  constructor(redis: RedisClient, key: string) {
    this.#redis = redis;
    this.#key = key;
  }

  /** Creates the key at `floor` unless it exists (SET NX): the first start after SQL carries on from there. */
  async start(floor: number): Promise<void> {
    await this.#redis.set(this.#key, String(floor), "NX");
  }

  async reserve(count: number): Promise<number> {
    return this.#redis.incrby(this.#key, count);
  }
}
