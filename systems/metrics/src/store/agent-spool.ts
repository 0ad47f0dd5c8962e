/**
 * The agent's buffer between cutting a batch and the ingest acknowledging it (MT-04): a
 * memory queue, then a size-bounded disk spool. A new batch goes to memory; past the memory
 * bound the OLDEST memory batches are written to the spool directory (one file each, named
 * by sequence and sample count, written to a temp name then renamed); past the spool's
 * bound the OLDEST spooled batches are deleted and their samples counted as dropped
 * (`onDropped`) — old data lost, never the application blocked, never a silent loss.
 * Batches leave in the order they came: the spool (older) first, then memory, so the
 * ingest sees each series in time order. The batch being sent is never the one evicted
 * (an eviction picks the oldest other), and a spool left by a previous run is sent first.
 *
 * One caller at a time mutates (the shipper's two loops go through `#serial`).
 *
 * @example
 * const spool = await AgentSpool.open({ dir, maxMemoryBytes: 8 << 20, maxSpoolBytes: 256 << 20, onDropped });
 * await spool.push({ body, samples });
 * const head = await spool.head();     // oldest: { id, body, samples }
 * await spool.ack(head.id);            // after the ingest's 2xx
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const DEFAULT_AGENT_MEMORY_BYTES = 8 * 1024 * 1024;
export const DEFAULT_AGENT_SPOOL_BYTES = 256 * 1024 * 1024;
const SPOOL_FILE = /^(\d{16})-(\d+)\.rw$/;

export interface SpoolEntry {
  readonly id: number;
  readonly samples: number;
  readonly bytes: number;
}

export interface SpoolHead extends SpoolEntry {
  readonly body: Uint8Array;
}

export interface AgentSpoolOptions {
  readonly dir: string;
  readonly maxMemoryBytes: number;
  readonly maxSpoolBytes: number;
  /** Samples of batches evicted past the spool's bound (or too large for it). */
  readonly onDropped: (samples: number, batches: number) => void;
}

export interface SpoolStats {
  readonly memoryBatches: number;
  readonly memoryBytes: number;
  readonly spoolBatches: number;
  readonly spoolBytes: number;
  readonly droppedSamples: number;
  readonly droppedBatches: number;
}

export class AgentSpool {
  readonly #options: AgentSpoolOptions;
  readonly #disk: SpoolEntry[] = [];
  readonly #memory: Array<SpoolEntry & { body: Uint8Array }> = [];
  #memoryBytes = 0;
  #spoolBytes = 0;
  #nextId = 1;
  #inFlight: number | undefined;
  #dropped = { samples: 0, batches: 0 };
  #serial: Promise<unknown> = Promise.resolve();

  private constructor(options: AgentSpoolOptions) {
    this.#options = options;
  }

  /** Opens the directory and takes in the batches a previous run left (sent first). */
  static async open(options: AgentSpoolOptions): Promise<AgentSpool> {
    const spool = new AgentSpool(options);
    await mkdir(options.dir, { recursive: true });
    const names = (await readdir(options.dir)).filter((n) => SPOOL_FILE.test(n)).sort();
    for (const name of names) {
      const [, id, samples] = SPOOL_FILE.exec(name)!;
      const bytes = (await stat(join(options.dir, name))).size;
      spool.#disk.push({ id: Number(id), samples: Number(samples), bytes });
      spool.#spoolBytes += bytes;
      spool.#nextId = Number(id) + 1;
    }
    return spool;
  }

  stats(): SpoolStats {
    return {
      memoryBatches: this.#memory.length,
      memoryBytes: this.#memoryBytes,
      spoolBatches: this.#disk.length,
      spoolBytes: this.#spoolBytes,
      droppedSamples: this.#dropped.samples,
      droppedBatches: this.#dropped.batches,
    };
  }

  get size(): number {
    return this.#disk.length + this.#memory.length;
  }

  push(batch: { body: Uint8Array; samples: number }): Promise<void> {
    return this.#run(async () => {
      const entry = {
        id: this.#nextId++,
        samples: batch.samples,
        bytes: batch.body.length,
        body: batch.body,
      };
      this.#memory.push(entry);
      this.#memoryBytes += entry.bytes;
      while (this.#memoryBytes > this.#options.maxMemoryBytes) {
        const index = this.#memory.findIndex((e) => e.id !== this.#inFlight);
        if (index < 0) break;
        const [oldest] = this.#memory.splice(index, 1);
        this.#memoryBytes -= oldest!.bytes;
        await this.#toDisk(oldest!);
      }
    });
  }

  /** Writes every memory batch to the spool (at shutdown: a restarted agent sends them first). */
  persist(): Promise<void> {
    return this.#run(async () => {
      for (const entry of this.#memory.splice(0)) {
        this.#memoryBytes -= entry.bytes;
        await this.#toDisk(entry);
      }
    });
  }

  /** The oldest batch, marked in flight (never evicted until acked or released); undefined when empty. */
  head(): Promise<SpoolHead | undefined> {
    return this.#run(async () => {
      const disk = this.#disk[0];
      const memory = this.#memory[0];
      // The lower id is the older: a memory batch that failed while in flight may predate the spool's first.
      if (disk !== undefined && (memory === undefined || disk.id < memory.id)) {
        this.#inFlight = disk.id;
        const body = await readFile(this.#path(disk));
        return { ...disk, body };
      }
      if (memory === undefined) return undefined;
      this.#inFlight = memory.id;
      return memory;
    });
  }

  /** The batch was acknowledged by the ingest (or refused for good): it leaves the buffer. */
  ack(id: number): Promise<void> {
    return this.#run(async () => {
      if (this.#inFlight === id) this.#inFlight = undefined;
      const d = this.#disk.findIndex((e) => e.id === id);
      if (d >= 0) {
        const [entry] = this.#disk.splice(d, 1);
        this.#spoolBytes -= entry!.bytes;
        await rm(this.#path(entry!), { force: true });
        return;
      }
      const m = this.#memory.findIndex((e) => e.id === id);
      if (m >= 0) this.#memoryBytes -= this.#memory.splice(m, 1)[0]!.bytes;
    });
  }

  /** The send failed: the batch stays first in line and may be evicted again. */
  release(id: number): void {
    if (this.#inFlight === id) this.#inFlight = undefined;
  }

  async #toDisk(entry: SpoolEntry & { body: Uint8Array }): Promise<void> {
    if (entry.bytes > this.#options.maxSpoolBytes) {
      this.#drop(entry.samples);
      return;
    }
    while (this.#spoolBytes + entry.bytes > this.#options.maxSpoolBytes) {
      const index = this.#disk.findIndex((e) => e.id !== this.#inFlight);
      if (index < 0) break;
      const [oldest] = this.#disk.splice(index, 1);
      this.#spoolBytes -= oldest!.bytes;
      await rm(this.#path(oldest!), { force: true });
      this.#drop(oldest!.samples);
    }
    const path = this.#path(entry);
    await writeFile(`${path}.tmp`, entry.body);
    await rename(`${path}.tmp`, path);
    // Spooled entries are older than every memory entry: they go in id order.
    const at = this.#disk.findIndex((e) => e.id > entry.id);
    const stored = { id: entry.id, samples: entry.samples, bytes: entry.bytes };
    if (at < 0) this.#disk.push(stored);
    else this.#disk.splice(at, 0, stored);
    this.#spoolBytes += entry.bytes;
  }

  #drop(samples: number): void {
    this.#dropped.samples += samples;
    this.#dropped.batches++;
    this.#options.onDropped(samples, 1);
  }

  #path(entry: SpoolEntry): string {
    return join(this.#options.dir, `${String(entry.id).padStart(16, "0")}-${entry.samples}.rw`);
  }

  #run<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#serial.then(work, work);
    this.#serial = next.catch(() => undefined);
    return next;
  }
}
