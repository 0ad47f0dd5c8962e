/**
 * The in-process twin of a Redis sorted set: members ordered by (score, member), with
 * Redis's range semantics (inclusive bounds, `(` for exclusive, `-inf`/`+inf`,
 * negative ranks count from the end). A member → score map answers ZSCORE in O(1);
 * a sorted array answers ranges by binary search. Inserts and removals are O(n)
 * array splices: fine for the sizes one in-process node holds (each key is bounded
 * by the keyspace's `maxElementsPerKey`), where Redis uses a skip list.
 *
 * Ties are ordered by JavaScript string comparison (UTF-16 code units); Redis compares
 * bytes. The two agree on every member without characters above U+FFFF.
 *
 * @example
 * const set = new SortedSet();
 * set.add("a", 2); set.add("b", 1);
 * set.rangeByRank(0, -1); // ["b", "a"]
 */

/** A score bound as Redis writes it: a number, `"(5"` (exclusive), `"-inf"`, `"+inf"`. */
export type ScoreBound = number | string;

interface Bound {
  value: number;
  exclusive: boolean;
}

interface Item {
  member: string;
  score: number;
}

export class SortedSet {
  readonly #scores = new Map<string, number>();
  #items: Item[] = [];

  get size(): number {
    return this.#items.length;
  }

  score(member: string): number | undefined {
    return this.#scores.get(member);
  }

  /** Adds or re-scores `member`; true when it was new. */
  add(member: string, score: number): boolean {
    if (Number.isNaN(score)) throw new RangeError("ERR resulting score is not a number (NaN)");
    const previous = this.#scores.get(member);
    if (previous !== undefined) this.#items.splice(this.#indexOf(member, previous), 1);
    this.#items.splice(this.#lowerBound(score, member), 0, { member, score });
    this.#scores.set(member, score);
    return previous === undefined;
  }

  remove(member: string): boolean {
    const score = this.#scores.get(member);
    if (score === undefined) return false;
    this.#items.splice(this.#indexOf(member, score), 1);
    this.#scores.delete(member);
    return true;
  }

  /** Members with rank in [start, stop], both inclusive; negative ranks count from the end. */
  rangeByRank(start: number, stop: number): string[] {
    const [from, to] = clampRanks(start, stop, this.#items.length);
    return this.#items.slice(from, to + 1).map((item) => item.member);
  }

  /** Members with min <= score <= max (bounds as ZRANGEBYSCORE writes them), optionally paged. */
  rangeByScore(min: ScoreBound, max: ScoreBound, offset = 0, count = Infinity): string[] {
    const [from, to] = this.#scoreSpan(min, max);
    const start = from + Math.max(0, offset);
    const end = count < 0 ? to : Math.min(to, start + count);
    return start >= end ? [] : this.#items.slice(start, end).map((item) => item.member);
  }

  countByScore(min: ScoreBound, max: ScoreBound): number {
    const [from, to] = this.#scoreSpan(min, max);
    return Math.max(0, to - from);
  }

  removeByScore(min: ScoreBound, max: ScoreBound): number {
    const [from, to] = this.#scoreSpan(min, max);
    if (to <= from) return 0;
    for (const item of this.#items.slice(from, to)) this.#scores.delete(item.member);
    this.#items.splice(from, to - from);
    return to - from;
  }

  /** Half-open index span [from, to) of the items inside the bounds. */
  #scoreSpan(min: ScoreBound, max: ScoreBound): [number, number] {
    const low = parseBound(min);
    const high = parseBound(max);
    const from = this.#firstIndex((item) =>
      low.exclusive ? item.score > low.value : item.score >= low.value,
    );
    const to = this.#firstIndex((item) =>
      high.exclusive ? item.score >= high.value : item.score > high.value,
    );
    return [from, Math.max(from, to)];
  }

  /** First index whose item satisfies a predicate that is monotone over the sorted items. */
  #firstIndex(reached: (item: Item) => boolean): number {
    let low = 0;
    let high = this.#items.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (reached(this.#items[mid]!)) high = mid;
      else low = mid + 1;
    }
    return low;
  }

  #lowerBound(score: number, member: string): number {
    return this.#firstIndex((item) => item.score > score || (item.score === score && item.member >= member));
  }

  #indexOf(member: string, score: number): number {
    const index = this.#lowerBound(score, member);
    if (this.#items[index]?.member !== member) throw new Error(`sorted set index lost member ${member}`);
    return index;
  }
}

/** Parses a ZRANGEBYSCORE bound; throws Redis's message on a malformed one. */
export function parseBound(bound: ScoreBound): Bound {
  if (typeof bound === "number") {
    if (Number.isNaN(bound)) throw new RangeError("ERR min or max is not a float");
    return { value: bound, exclusive: false };
  }
  const exclusive = bound.startsWith("(");
  const text = (exclusive ? bound.slice(1) : bound).toLowerCase();
  const value = text === "-inf" ? -Infinity : text === "+inf" || text === "inf" ? Infinity : Number(text);
  if (text === "" || Number.isNaN(value)) throw new RangeError("ERR min or max is not a float");
  return { value, exclusive };
}

/** Redis rank arithmetic: negative counts from the end, then clamp to the list; empty when start > stop. */
export function clampRanks(start: number, stop: number, length: number): [number, number] {
  const from = Math.max(0, start < 0 ? length + start : start);
  const to = Math.min(length - 1, stop < 0 ? length + stop : stop);
  return [from, to];
}
