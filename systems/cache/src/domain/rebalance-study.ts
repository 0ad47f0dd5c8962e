/**
 * CA-10's table, as the text computes it (004 §6.1): 50,000 keys `event:0…`, a cluster
 * growing from 4 to 5 nodes, and for each placement the share of keys whose owner
 * changed and the busiest node's load over the average, after the change. Placements:
 * `hash % N`, and the ring with 1, 10, 100 and 1,000 virtual nodes per node. The text
 * hashes with md5; this uses murmur3 (the ring's hash) unless told otherwise, so single
 * rows differ from the text's by noise while the shape is the same; given md5's first 32
 * bits as `hash`, it reproduces the text's table.
 *
 * @example
 * const rows = rebalanceStudy();
 * rows[0]; // { scheme: "hash % N", vnodes: null, movedFraction: ~0.8, maxOverAvg: ~1.0 }
 */

import { murmur3 } from "@casebook/kit/murmur3";
import { requireInteger } from "../errors.ts";
import { HashRing } from "./hash-ring.ts";
import { moduloOwner } from "./modulo-placement.ts";

export interface RebalanceRow {
  readonly scheme: string;
  /** Points per node on the ring; null for `hash % N`. */
  readonly vnodes: number | null;
  /** Share of keys whose owner changed from `nodesBefore` to `nodesAfter` nodes. */
  readonly movedFraction: number;
  /** After the change: keys on the busiest node / (keys / nodes). 1.0 is perfect balance. */
  readonly maxOverAvg: number;
  /** Of the keys that moved, the share that moved to the new nodes (the ring: all of them). */
  readonly movedToNewFraction: number;
  /** After the change: the share of keys the new nodes own (the ring moves exactly this). */
  readonly newNodesShare: number;
}

export interface RebalanceOptions {
  readonly keys?: number;
  readonly nodesBefore?: number;
  readonly nodesAfter?: number;
  readonly vnodeCounts?: readonly number[];
  /** A stable 32-bit hash of a string, for keys and points (murmur3 by default). */
  readonly hash?: (text: string) => number;
}

/** Bound on the study's key count (a row is one pass over the keys per layout). */
export const MAX_STUDY_KEYS = 10_000_000;

export function rebalanceStudy(options: RebalanceOptions = {}): RebalanceRow[] {
  const keyCount = options.keys ?? 50_000;
  const before = options.nodesBefore ?? 4;
  const after = options.nodesAfter ?? 5;
  requireInteger("keys", keyCount, 1, MAX_STUDY_KEYS);
  requireInteger("nodesBefore", before, 1, 1_000);
  requireInteger("nodesAfter", after, before + 1, 1_000);
  const hash = options.hash ?? murmur3;
  const hashes = Uint32Array.from({ length: keyCount }, (_, i) => hash(`event:${i}`));
  const modulo = compare(
    hashes,
    (hash) => moduloOwner(hash, before),
    (hash) => moduloOwner(hash, after),
    before,
    after,
  );
  const rows: RebalanceRow[] = [{ scheme: "hash % N", vnodes: null, ...modulo }];
  for (const vnodes of options.vnodeCounts ?? [1, 10, 100, 1_000]) {
    const ringBefore = ringOf(before, vnodes, hash);
    const ringAfter = ringOf(after, vnodes, hash);
    const owner = (ring: HashRing) => (hash: number) => Number(ring.ownerOfHash(hash).slice("node".length));
    const ring = compare(hashes, owner(ringBefore), owner(ringAfter), before, after);
    rows.push({ scheme: `ring, ${vnodes} vnodes/node`, vnodes, ...ring });
  }
  return rows;
}

/** Nodes named `node0`, `node1`, … like the text's, so their points are `node0#0`, … */
function ringOf(nodes: number, vnodes: number, hash: (text: string) => number): HashRing {
  const ring = new HashRing({ vnodes, hash });
  for (let n = 0; n < nodes; n++) ring.addNode(`node${n}`);
  return ring;
}

function compare(
  hashes: Uint32Array,
  ownerBefore: (hash: number) => number,
  ownerAfter: (hash: number) => number,
  before: number,
  after: number,
): Omit<RebalanceRow, "scheme" | "vnodes"> {
  const counts = new Array<number>(after).fill(0);
  let moved = 0;
  let movedToNew = 0;
  for (const hash of hashes) {
    const from = ownerBefore(hash);
    const to = ownerAfter(hash);
    counts[to]!++;
    if (from !== to) {
      moved++;
      if (to >= before) movedToNew++;
    }
  }
  return {
    movedFraction: moved / hashes.length,
    maxOverAvg: Math.max(...counts) / (hashes.length / after),
    movedToNewFraction: moved === 0 ? 1 : movedToNew / moved,
    newNodesShare: counts.slice(before).reduce((sum, count) => sum + count, 0) / hashes.length,
  };
}
