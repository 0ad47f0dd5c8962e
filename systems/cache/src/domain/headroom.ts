/**
 * CA-13 Headroom: maxmemory must sit below the machine's memory, because data is not
 * all a node holds. The allocator fragments (RSS / used_memory > 1), replication keeps
 * a backlog and per-replica output buffers, a snapshot's fork copies every page written
 * while it runs, and the OS needs its share. A node that swaps is slower than no cache.
 *
 * `planMaxmemory` turns those into a maxmemory: (RAM − buffers − reserve) divided by
 * what each byte of data really costs (fragmentation + fork copy share). With the
 * numbers Redis operators see (fragmentation 1.1–1.2, a 10–20% fork copy, 1 GB of
 * replication buffers, 2 GB for the OS) it lands at 70–80% of RAM: the text's rule.
 *
 * @example
 * planMaxmemory({ ramBytes: 64 * GIB, fragmentationRatio: 1.1, forkCopyShare: 0.1,
 *   replicationBufferBytes: 1 * GIB, reservedBytes: 2 * GIB });
 * // { maxmemoryBytes: ≈ 50.8 GiB, dataShareOfRam: ≈ 0.79 }
 */

export const GIB = 1024 ** 3;

/** The text's rule of thumb, used when nothing is measured: plan ~75% of RAM for data. */
export const DEFAULT_DATA_SHARE = 0.75;

/**
 * RSS growth per accounted byte on this node, measured after 2 × 2 M random SETs over 1 M keys
 * of 100 B (pipelined redis-benchmark): RSS 325.5 MiB for 194.7 MiB accounted, 120 MiB of it
 * the idle process (Node, its TypeScript loader and this code), so (325.5 − 120) / 194.7 ≈ 1.05;
 * a node with maxmemory 64mb written 3 × over grew by 0.9 × maxmemory (memory-accounting
 * test). Keys and values live in slab arenas off the V8 heap (value-arena.ts), so the heap no
 * longer doubles what it holds between collections (it was 2.35 when they were JS strings).
 * Reserve the idle RSS apart (`reservedBytes`).
 */
export const MEASURED_NODE_FRAGMENTATION = 1.1;

export interface HeadroomInput {
  readonly ramBytes: number;
  /** RSS / used_memory as observed (INFO mem_fragmentation_ratio); ≥ 1. */
  readonly fragmentationRatio: number;
  /** Share of the data copied by a snapshot fork's copy-on-write; 0 without persistence. */
  readonly forkCopyShare: number;
  /** Replication backlog plus replica output buffers. */
  readonly replicationBufferBytes: number;
  /** What the OS and other processes on the machine keep. */
  readonly reservedBytes: number;
}

export interface HeadroomPlan {
  readonly maxmemoryBytes: number;
  readonly dataShareOfRam: number;
}

export function planMaxmemory(input: HeadroomInput): HeadroomPlan {
  const { ramBytes, fragmentationRatio, forkCopyShare, replicationBufferBytes, reservedBytes } = input;
  if (!(ramBytes > 0)) throw new RangeError("ramBytes must be > 0");
  if (!(fragmentationRatio >= 1))
    throw new RangeError("fragmentationRatio must be >= 1 (RSS never holds less than the data)");
  if (!(forkCopyShare >= 0 && forkCopyShare <= 1)) throw new RangeError("forkCopyShare must be in [0, 1]");
  const available = ramBytes - replicationBufferBytes - reservedBytes;
  if (!(available > 0)) throw new RangeError("buffers and reserve leave no memory for data");
  const maxmemoryBytes = Math.floor(available / (fragmentationRatio + forkCopyShare));
  return { maxmemoryBytes, dataShareOfRam: maxmemoryBytes / ramBytes };
}
