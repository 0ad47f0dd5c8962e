/**
 * The primary's replication history (Redis's replication backlog): every write it
 * streams to its replicas, numbered. A replica's position is an offset (how many entries
 * it has applied) within a history named by `replid`. A replica that reconnects with an
 * offset still held here catches up with just the entries after it (partial resync,
 * `CONTINUE`); one that fell further behind, or comes from another history, needs a full
 * sync. The backlog keeps the newest entries up to `maxBytes`: a bound on memory that is
 * also the longest disconnection a partial resync survives.
 *
 * Offsets count entries, not bytes as in Redis: each entry is one effect (a key's new
 * value, a deletion, a flush), so "how many writes is a replica behind" reads directly.
 *
 * @example
 * const backlog = new ReplicationBacklog({ maxBytes: 1 << 20 });
 * backlog.append(encoded);      // offset 1
 * backlog.since(0);             // [encoded]
 * backlog.since(1);             // []
 */
import { Deque } from "@casebook/kit/deque";

export interface ReplicationBacklogOptions {
  /** Bytes of entries kept (Redis's repl-backlog-size, 1 MB by default). */
  readonly maxBytes: number;
}

export class ReplicationBacklog {
  readonly #maxBytes: number;
  readonly #entries = new Deque<Buffer>();
  #bytes = 0;
  #offset = 0;

  constructor(options: ReplicationBacklogOptions) {
    if (!(Number.isInteger(options.maxBytes) && options.maxBytes > 0)) {
      throw new RangeError(`maxBytes must be an integer > 0, got ${options.maxBytes}`);
    }
    this.#maxBytes = options.maxBytes;
  }

  /** Entries appended in this history: the primary's replication offset. */
  get offset(): number {
    return this.#offset;
  }

  /** The lowest offset a replica may resume from. */
  get firstOffset(): number {
    return this.#offset - this.#entries.length;
  }

  get bytes(): number {
    return this.#bytes;
  }

  append(entry: Buffer): void {
    this.#entries.push(entry);
    this.#bytes += entry.length;
    this.#offset += 1;
    // The newest entry stays even when it alone is above maxBytes: a replica still gets it.
    while (this.#bytes > this.#maxBytes && this.#entries.length > 1) {
      this.#bytes -= this.#entries.shift()!.length;
    }
  }

  /** The entries after `offset`, or undefined when they are no longer (or never were) held. */
  since(offset: number): Buffer[] | undefined {
    if (!Number.isInteger(offset) || offset < this.firstOffset || offset > this.#offset) return undefined;
    return this.#entries.slice(this.#entries.length - (this.#offset - offset));
  }

  /** Starts a new history at `offset` (a promoted replica keeps counting from where it was). */
  reset(offset: number): void {
    this.#entries.clear();
    this.#bytes = 0;
    this.#offset = offset;
  }
}
