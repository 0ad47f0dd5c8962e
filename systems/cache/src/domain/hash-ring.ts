/**
 * Consistent hashing (Karger et al. 1997; CA-03, CA-10): nodes and keys hash onto one
 * 32-bit ring, and a key belongs to the first node point at or clockwise after its hash.
 * A node joining takes only the arcs just before its points, from their old owners: about
 * 1/N of the keys move, the minimum, where `hash % N` moves almost all of them. Each node
 * places many virtual points (`node#0`, `node#1`, …) so its share evens out and a failed
 * node's keys spread over all the others instead of landing on one neighbour.
 *
 * Points are murmur3 of "<node>#<i>" by default (stable across languages and restarts;
 * `hash` swaps it, e.g. for the text's md5 when reproducing its table), kept sorted
 * in a Uint32Array; a lookup is a binary search, O(log points). Joining or leaving rebuilds
 * the arrays (O(points log points)), which is fine at membership-change rates. Two points
 * with the same hash are ordered by node name, so every client builds the same ring.
 *
 * @example
 * const ring = new HashRing({ vnodes: 100 });
 * for (const node of ["node-a", "node-b", "node-c"]) ring.addNode(node);
 * ring.ownerOf("event:42"); // e.g. "node-b", the same in every process
 */

import { murmur3 } from "@casebook/kit/murmur3";
import { policyErrors, requireInteger } from "../errors.ts";

/** Bound on points per node: 10,000 × 1,000 nodes is 10 M points, 80 MB of arrays. */
export const MAX_VNODES = 10_000;

export interface HashRingOptions {
  /** Points per node unless `addNode` says otherwise (100 by default). */
  readonly vnodes?: number;
  /** A stable 32-bit hash of a string, for points and keys (murmur3 by default). */
  readonly hash?: (text: string) => number;
}

interface Point {
  readonly hash: number;
  readonly node: string;
}

export class HashRing {
  readonly #defaultVnodes: number;
  readonly #hash: (text: string) => number;
  readonly #vnodes = new Map<string, number>();
  #hashes = new Uint32Array(0);
  #owners: string[] = [];

  constructor(options: HashRingOptions = {}) {
    const vnodes = options.vnodes ?? 100;
    requireInteger("vnodes", vnodes, 1, MAX_VNODES);
    this.#defaultVnodes = vnodes;
    this.#hash = options.hash ?? murmur3;
  }

  /** Nodes on the ring, in the order they joined. */
  get nodes(): string[] {
    return [...this.#vnodes.keys()];
  }

  /** Total points on the ring. */
  get size(): number {
    return this.#hashes.length;
  }

  /** Places `node`'s points (a bigger machine may take more); throws CACHE_RING_NODE_EXISTS if present. */
  addNode(node: string, vnodes = this.#defaultVnodes): void {
    requireInteger("vnodes", vnodes, 1, MAX_VNODES);
    if (this.#vnodes.has(node)) throw policyErrors.create("CACHE_RING_NODE_EXISTS", { fields: { node } });
    this.#vnodes.set(node, vnodes);
    this.#rebuild();
  }

  /** Takes `node`'s points off: its arcs fall to the next points clockwise. */
  removeNode(node: string): void {
    if (!this.#vnodes.delete(node))
      throw policyErrors.create("CACHE_RING_NODE_UNKNOWN", { fields: { node } });
    this.#rebuild();
  }

  /** The owner of `key`; throws CACHE_RING_EMPTY when no node is on the ring. */
  ownerOf(key: string): string {
    return this.ownerOfHash(this.#hash(key));
  }

  /** The owner of a 32-bit key hash: the first point >= hash, wrapping past the top to the first point. */
  ownerOfHash(hash: number): string {
    const hashes = this.#hashes;
    if (hashes.length === 0) throw policyErrors.create("CACHE_RING_EMPTY");
    const target = hash >>> 0;
    let low = 0;
    let high = hashes.length;
    // Binary search for the first point >= target: at most log2(points) + 1 passes.
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (hashes[mid]! < target) low = mid + 1;
      else high = mid;
    }
    return this.#owners[low === hashes.length ? 0 : low]!;
  }

  #rebuild(): void {
    const points: Point[] = [];
    for (const [node, count] of this.#vnodes) {
      for (let i = 0; i < count; i++) points.push({ hash: this.#hash(`${node}#${i}`) >>> 0, node });
    }
    points.sort((a, b) => a.hash - b.hash || (a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
    this.#hashes = Uint32Array.from(points, (point) => point.hash);
    this.#owners = points.map((point) => point.node);
  }
}
