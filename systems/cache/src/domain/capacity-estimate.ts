/**
 * The text's back-of-the-envelope sizing (004 §2, CA-04), plus the headroom rule (CA-13)
 * and the big-key arithmetic (CA-19), as functions a test can check and an operator can
 * feed their own numbers. Decimal units throughout, as the text uses (1 GB = 1e9 B).
 *
 * Where the text rounds, both numbers are here: memory alone needs 17.2 nodes, which the
 * text calls "~17" but is 18 machines; the ops bound (25) decides anyway. Losing 1 of 25
 * nodes sends its whole slice, 80k req/s, to the database, but 5% of that slice missed
 * already, so the extra misses are 76k/s: "~80k" is the slice, not the increase.
 *
 * @example
 * const e = estimateCacheCapacity(textAssumptions);
 * e.dataTb;      // 1.1
 * e.primaries;   // 25 (ops decide: 2M / 80k)
 * e.totalNodes;  // 50
 * e.dbReqPerS;   // 100_000 at 95% hits
 */
import { requireNumber } from "../errors.ts";

export interface CacheCapacityInput {
  /** Cached objects (the working set). */
  readonly items: number;
  readonly valueBytes: number;
  readonly keyBytes: number;
  /** Per-item metadata, pointers and allocator slack. */
  readonly overheadBytes: number;
  /** RAM per node usable for data (after headroom, see `headroom`). */
  readonly nodeMemGb: number;
  /** Total cache operations per second at peak. */
  readonly opsPerS: number;
  /** Comfortable ops/s for one (single-threaded) node. */
  readonly opsPerNode: number;
  /** Replicas per primary. */
  readonly replicas: number;
  /** Share of reads served by the cache (0..1). */
  readonly hitRatio: number;
}

/** The text's assumptions, verbatim. */
export const textAssumptions: CacheCapacityInput = {
  items: 1_000_000_000,
  valueBytes: 1_000,
  keyBytes: 50,
  overheadBytes: 50,
  nodeMemGb: 64,
  opsPerS: 2_000_000,
  opsPerNode: 80_000,
  replicas: 1,
  hitRatio: 0.95,
};

export interface CacheCapacityEstimate {
  readonly dataTb: number;
  /** Nodes memory alone needs, unrounded (the text's "~17"). */
  readonly nodesByMemory: number;
  readonly nodesByOps: number;
  /** Whole machines: the larger of the two bounds, rounded up. */
  readonly primaries: number;
  readonly totalNodes: number;
  /** Which bound decided the primaries. */
  readonly decidedBy: "memory" | "ops";
  /** Value bytes crossing the network at peak, if every op moves one value. */
  readonly valuesGbPerS: number;
  readonly valuesMbPerSPerNode: number;
  /** Data each primary holds. */
  readonly dataGbPerPrimary: number;
  /** Database requests per second at the input hit ratio. */
  readonly dbReqPerS: number;
  /** What one percentage point of hit ratio is worth in database requests per second. */
  readonly dbReqPerSPerHitPoint: number;
  /** A cold-lost primary's slice of traffic, which now goes to the database. */
  readonly lostNodeSliceReqPerS: number;
  /** Of that slice, the misses that are new (the rest missed before the loss too). */
  readonly lostNodeExtraMissesPerS: number;
}

/**
 * Database requests per second when the cache serves `hitRatio` of `opsPerS`.
 *
 * @example
 * dbRequestsPerS(2_000_000, 0.9); // 200_000
 */
export function dbRequestsPerS(opsPerS: number, hitRatio: number): number {
  requireNumber("hitRatio", hitRatio, 0, 1);
  // Rounded to the request: 1 − 0.95 is 0.050000000000000044 in binary floating point.
  return Math.round(opsPerS * (1 - hitRatio));
}

/** The text's sizing: size by memory and by throughput, keep the larger (CA-23). */
export function estimateCacheCapacity(input: CacheCapacityInput): CacheCapacityEstimate {
  for (const [name, value] of Object.entries(input)) {
    requireNumber(name, value, name === "replicas" || name === "hitRatio" ? 0 : Number.MIN_VALUE, 1e18);
  }
  requireNumber("hitRatio", input.hitRatio, 0, 1);
  const dataBytes = input.items * (input.valueBytes + input.keyBytes + input.overheadBytes);
  const nodesByMemory = dataBytes / (input.nodeMemGb * 1e9);
  const nodesByOps = input.opsPerS / input.opsPerNode;
  const primaries = Math.ceil(Math.max(nodesByMemory, nodesByOps) - 1e-9);
  const valuesBytesPerS = input.opsPerS * input.valueBytes;
  const slice = input.opsPerS / primaries;
  return {
    dataTb: dataBytes / 1e12,
    nodesByMemory,
    nodesByOps,
    primaries,
    totalNodes: primaries * (1 + input.replicas),
    decidedBy: nodesByOps >= nodesByMemory ? "ops" : "memory",
    valuesGbPerS: valuesBytesPerS / 1e9,
    valuesMbPerSPerNode: valuesBytesPerS / primaries / 1e6,
    dataGbPerPrimary: dataBytes / primaries / 1e9,
    dbReqPerS: dbRequestsPerS(input.opsPerS, input.hitRatio),
    dbReqPerSPerHitPoint: input.opsPerS / 100,
    lostNodeSliceReqPerS: slice,
    lostNodeExtraMissesPerS: slice * input.hitRatio,
  };
}

export interface Headroom {
  /** What to set maxmemory to. */
  readonly maxmemoryGb: number;
  /** Left for fragmentation, replication buffers, the snapshot fork, the OS. */
  readonly reservedGb: number;
}

/**
 * CA-13: plan ~70–80% of a machine's RAM for data; the rest is not waste, it is what keeps
 * the node out of swap (a swapping cache is slower than no cache).
 *
 * @example
 * headroom(64, 0.75); // { maxmemoryGb: 48, reservedGb: 16 }
 */
export function headroom(ramGb: number, dataFraction = 0.75): Headroom {
  requireNumber("ramGb", ramGb, Number.MIN_VALUE, 1e9);
  requireNumber("dataFraction", dataFraction, 0.5, 0.95);
  const maxmemoryGb = ramGb * dataFraction;
  return { maxmemoryGb, reservedGb: ramGb - maxmemoryGb };
}

/**
 * The machine RAM that leaves `dataGb` for data at `dataFraction`: the inverse of `headroom`.
 *
 * @example
 * ramForDataGb(64, 0.8); // 80: the text's 64 GB "usable for data" needs an 80 GB machine
 */
export function ramForDataGb(dataGb: number, dataFraction = 0.75): number {
  requireNumber("dataGb", dataGb, 0, 1e9);
  requireNumber("dataFraction", dataFraction, 0.5, 0.95);
  return dataGb / dataFraction;
}

export interface BigKeyLoad {
  readonly bytesPerS: number;
  /** The same in Gbit/s, the unit network links are sold in. */
  readonly gbitPerS: number;
  /** How many links of `linkGbit` one key fills. */
  readonly linksFilled: number;
}

/**
 * CA-19: a big hot key's bandwidth, all of it from the ONE node that owns the key
 * (consistent hashing spreads keys, not popularity).
 *
 * @example
 * bigKeyLoad(5e6, 1_000, 10); // { bytesPerS: 5e9, gbitPerS: 40, linksFilled: 4 }
 */
export function bigKeyLoad(valueBytes: number, readsPerS: number, linkGbit = 10): BigKeyLoad {
  requireNumber("valueBytes", valueBytes, 0, 1e15);
  requireNumber("readsPerS", readsPerS, 0, 1e12);
  requireNumber("linkGbit", linkGbit, Number.MIN_VALUE, 1e6);
  const bytesPerS = valueBytes * readsPerS;
  const gbitPerS = (bytesPerS * 8) / 1e9;
  return { bytesPerS, gbitPerS, linksFilled: gbitPerS / linkGbit };
}
