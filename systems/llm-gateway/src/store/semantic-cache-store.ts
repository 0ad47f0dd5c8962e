/**
 * The semantic cache's store (LG-11, LG-14): entries in the database (PGlite or PostgreSQL,
 * one contract suite on both), a lookup the most similar live entry of ONE tenant and ONE
 * scope at or above the threshold — an exact scan, the distance computed by the engine
 * (`cube`'s euclidean distance, in C; unit vectors: cosine = 1 − d²/2). No approximate
 * index: what it finds is the true nearest entry, and its cost grows with the tenant's
 * entries (measured at 100k by the bench's `--cache-entries`).
 *
 * @example
 * const store = new SemanticCacheStore(db, { clock });
 * await store.insert({ tenantId: "acme", scope, prompt, embedding, answer, ttlMs: 3_600_000 });
 * await store.insertMany([entry, entry2]); // one INSERT (the cache writer's batches)
 * await store.lookup({ tenantId: "acme", scope, embedding, threshold: 0.85 }); // { id, similarity, answer } | undefined
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";

/** What a hit gives back: enough to answer as a whole completion or as a stream. */
export interface CachedAnswer {
  readonly content: string;
  readonly finishReason: string;
  /** The upstream model that wrote it. */
  readonly model: string;
  readonly promptTokens: number;
  readonly completionTokens: number;
}

/** One answer to remember: who asked, in which scope, the prompt and its vector, for how long. */
export interface CacheEntry {
  readonly tenantId: string;
  readonly scope: string;
  readonly prompt: string;
  readonly embedding: Float32Array;
  readonly answer: CachedAnswer;
  readonly ttlMs: number;
}

/** Entries per INSERT at most: 7 parameters each, far below PostgreSQL's 65,535 per statement. */
export const MAX_CACHE_INSERT_BATCH = 1_000;

export interface CacheHit {
  readonly id: string;
  readonly similarity: number;
  readonly prompt: string;
  readonly answer: CachedAnswer;
}

const LOOKUP_SQL = `
SELECT id::text AS id, prompt, answer, distance FROM (
  SELECT id, prompt, answer, public.cube_distance(embedding, public.cube($3::float8[])) AS distance
    FROM llm_semantic_cache
   WHERE tenant_id = $1 AND scope = $2 AND expires_at > $4
) AS scored
WHERE distance <= $5
ORDER BY distance, id DESC
LIMIT 1`;

/** The largest euclidean distance of two unit vectors whose cosine is at least `threshold`. */
export function distanceFor(threshold: number): number {
  return Math.sqrt(Math.max(0, 2 - 2 * threshold));
}

export class SemanticCacheStore {
  readonly #db: Database;
  readonly #clock: Clock;

  constructor(db: Database, options: { clock: Clock }) {
    this.#db = db;
    this.#clock = options.clock;
  }

  async lookup(input: {
    tenantId: string;
    scope: string;
    embedding: Float32Array;
    threshold: number;
  }): Promise<CacheHit | undefined> {
    const { rows } = await this.#db.query<{
      id: string;
      prompt: string;
      answer: CachedAnswer | string;
      distance: number | string;
    }>(
      LOOKUP_SQL,
      [
        input.tenantId,
        input.scope,
        [...input.embedding],
        new Date(this.#clock.nowMs()),
        // Float rounding: a distance computed as 1e-9 above the bound is the bound.
        distanceFor(input.threshold) + 1e-9,
      ],
      { name: "llm_cache_lookup" },
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    const answer = typeof row.answer === "string" ? (JSON.parse(row.answer) as CachedAnswer) : row.answer;
    const distance = Number(row.distance);
    return { id: row.id, prompt: row.prompt, similarity: 1 - (distance * distance) / 2, answer };
  }

  async insert(input: CacheEntry): Promise<void> {
    await this.insertMany([input]);
  }

  /** The entries in one INSERT (a multi-row VALUES list): one round trip and one connection for the batch. */
  async insertMany(entries: readonly CacheEntry[]): Promise<void> {
    if (entries.length === 0) return;
    if (entries.length > MAX_CACHE_INSERT_BATCH)
      throw new RangeError(`at most ${MAX_CACHE_INSERT_BATCH} entries per insert, got ${entries.length}`);
    const nowMs = this.#clock.nowMs();
    const values: unknown[] = [];
    const rows = entries.map((entry, i) => {
      const p = i * 7;
      values.push(
        entry.tenantId,
        entry.scope,
        entry.prompt,
        [...entry.embedding],
        JSON.stringify(entry.answer),
        new Date(nowMs),
        new Date(nowMs + entry.ttlMs),
      );
      return `($${p + 1}, $${p + 2}, $${p + 3}, public.cube($${p + 4}::float8[]), $${p + 5}::jsonb, $${p + 6}, $${p + 7})`;
    });
    await this.#db.query(
      `INSERT INTO llm_semantic_cache (tenant_id, scope, prompt, embedding, answer, created_at, expires_at)
       VALUES ${rows.join(", ")}`,
      values,
    );
  }

  /** Deletes expired entries, at most `limit` per call; returns how many. */
  async sweep(limit = 10_000): Promise<number> {
    const { rowCount } = await this.#db.query(
      `DELETE FROM llm_semantic_cache WHERE id IN (
         SELECT id FROM llm_semantic_cache WHERE expires_at <= $1 LIMIT $2)`,
      [new Date(this.#clock.nowMs()), limit],
    );
    return rowCount;
  }
}
