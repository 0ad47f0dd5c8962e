/**
 * Bélády's optimal policy (MIN, 1966): knowing the whole future, on a miss with a full
 * cache evict the key whose next use is furthest away. No online policy can beat it, so it
 * is the ceiling every hit ratio in the study is read against (CA-24).
 *
 * This is the variant that may also decline to cache the missed key when its own next use
 * is further away than every resident key's (OPT with bypass): W-TinyLFU can refuse
 * admission too, so the bound must be allowed to, else it would not be an upper bound for
 * admission policies. Unit-size entries only (with sizes the problem is NP-hard).
 *
 * O(n log c): one backward pass builds the next-use index, then each request is a map
 * lookup plus heap work. A key never used again gets next use `n + position`, past every
 * real position.
 *
 * @example
 * const trace = Int32Array.from([1, 2, 3, 1, 2, 3]);
 * beladyHits(trace, 2); // 2: keep 1 and 2 and let 3 pass, the best any cache of 2 entries can do
 */
import { type HeapNode, IndexedHeap } from "@casebook/kit/indexed-heap";
import { requireInteger } from "../errors.ts";
import { requireTraceKeys } from "./trace-keys.ts";

/**
 * For each position i, the next position j > i holding the same key, or `n + i` when the
 * key is not requested again (distinct values keep ties out of the heap).
 *
 * @example
 * nextUseIndex(Int32Array.from([7, 8, 7])); // Int32Array [2, 4, 5]
 */
export function nextUseIndex(trace: Int32Array): Int32Array {
  const maxKey = requireTraceKeys(trace);
  const n = trace.length;
  const next = new Int32Array(n);
  const lastSeen = new Int32Array(maxKey + 1).fill(-1);
  for (let i = n - 1; i >= 0; i--) {
    const key = trace[i]!;
    const seen = lastSeen[key]!;
    next[i] = seen === -1 ? n + i : seen;
    lastSeen[key] = i;
  }
  return next;
}

interface Resident extends HeapNode {
  readonly key: number;
  nextUse: number;
}

/**
 * Hits of the optimal cache of `capacity` entries on `trace` (pass `next` to reuse an index
 * built once for several capacities).
 *
 * @example
 * const next = nextUseIndex(trace);
 * [100, 1_000].map((capacity) => beladyHits(trace, capacity, next));
 */
export function beladyHits(trace: Int32Array, capacity: number, next = nextUseIndex(trace)): number {
  requireInteger("capacity", capacity, 1, 2 ** 24);
  if (next.length !== trace.length) throw new RangeError("next must be nextUseIndex(trace)");
  const resident = new Map<number, Resident>();
  // Max-heap on next use: the root is the key needed furthest in the future.
  const heap = new IndexedHeap<Resident>((a, b) => a.nextUse > b.nextUse);
  let hits = 0;
  for (let i = 0; i < trace.length; i++) {
    const key = trace[i]!;
    const nextUse = next[i]!;
    const entry = resident.get(key);
    if (entry !== undefined) {
      hits++;
      entry.nextUse = nextUse;
      heap.update(entry);
      continue;
    }
    if (resident.size >= capacity) {
      const furthest = heap.peek()!;
      if (furthest.nextUse < nextUse) continue; // bypass: every resident key is needed sooner
      heap.pop();
      resident.delete(furthest.key);
    }
    const added: Resident = { key, nextUse, heapIndex: -1 };
    resident.set(key, added);
    heap.push(added);
  }
  return hits;
}
