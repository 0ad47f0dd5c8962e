/**
 * The semantic cache's inserts, off the request path and bounded: an answer to remember is
 * handed over and written with its neighbours in one INSERT per batch (kit's `GroupCommit`:
 * one write at a time, so the inserts hold ONE database connection however many streams end
 * together — the lookups, the key checks and the usage rows keep the rest of the pool). A
 * cache entry is an optimisation, not a record: past `maxPending` entries waiting, the new
 * one is shed at once (`"shed"`, counted by the caller in `llm_gateway_cache_writes_total`),
 * never queued without bound and never waited for — the answer is already out, and a
 * database too slow for the inserts is not slowed further by them. A failed batch is not
 * retried (`"failed"`): the next identical request misses and is remembered then.
 *
 * @example
 * const writer = new SemanticCacheWriter(store, { maxBatch: 100, maxPending: 1_000 });
 * await writer.remember(entry); // "written" | "shed" | "failed"
 * await writer.drain();         // at shutdown, before the pool closes
 */
import { GroupCommit } from "@casebook/kit/group-commit";
import { kitErrors } from "@casebook/kit/kit-errors";
import type { CacheEntry } from "./semantic-cache-store.ts";

/** Entries per INSERT. */
export const DEFAULT_CACHE_WRITE_BATCH = 100;
/** Entries waiting at once; past it a new one is shed. */
export const DEFAULT_CACHE_WRITE_MAX_PENDING = 1_000;

export type CacheWriteResult = "written" | "shed" | "failed";

/** Where the entries go (`SemanticCacheStore`). */
export interface CacheEntries {
  insertMany(entries: readonly CacheEntry[]): Promise<void>;
}

export class SemanticCacheWriter {
  readonly #commit: GroupCommit<CacheEntry, true>;

  constructor(store: CacheEntries, options: { maxBatch: number; maxPending: number }) {
    this.#commit = new GroupCommit(
      async (batch) => {
        await store.insertMany(batch);
        return batch.map(() => true as const);
      },
      { maxBatch: options.maxBatch, maxPending: options.maxPending },
    );
  }

  /** Settles once the entry is written, at once when shed; `failed` carries no error (the caller logs it). */
  async remember(entry: CacheEntry, onError?: (error: unknown) => void): Promise<CacheWriteResult> {
    try {
      await this.#commit.submit(entry);
      return "written";
    } catch (error) {
      if (kitErrors.is(error, "GROUP_COMMIT_QUEUE_FULL")) return "shed";
      onError?.(error);
      return "failed";
    }
  }

  drain(): Promise<void> {
    return this.#commit.drain();
  }
}
