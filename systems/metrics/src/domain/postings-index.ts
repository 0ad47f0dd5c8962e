/**
 * The inverted index (MT-17): for every label pair, the sorted list of series refs that carry
 * it (its postings), so a selector is a few list intersections instead of a scan of every
 * series. Refs are handed out in increasing order, so appending keeps every list sorted and
 * intersection is a linear merge.
 *
 * A matcher that matches the empty string (`!=`, `!~`, `=""`, `=~".*"`) also selects the
 * series that lack the label; it is evaluated as "all minus the values it rejects", exactly
 * as Prometheus's PostingsForMatchers does. A query with only such matchers starts from the
 * list of all series.
 *
 * @example
 * const index = new PostingsIndex();
 * index.add(1, [["__name__", "up"], ["job", "api"]]);
 * index.add(2, [["__name__", "up"], ["job", "web"]]);
 * index.select([labelMatcher("=", "__name__", "up"), labelMatcher("!=", "job", "web")]); // [1]
 */
import { assert } from "@casebook/kit/assert";
import type { LabelMatcher } from "./label-matcher.ts";
import type { Labels } from "./labels.ts";

export function intersectSorted(a: readonly number[], b: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
    if (x === y) {
      out.push(x);
      i++;
      j++;
    } else if (x < y) i++;
    else j++;
  }
  return out;
}

export function subtractSorted(a: readonly number[], b: readonly number[]): number[] {
  if (b.length === 0) return [...a];
  const out: number[] = [];
  let j = 0;
  for (const x of a) {
    while (j < b.length && b[j]! < x) j++;
    if (j >= b.length || b[j] !== x) out.push(x);
  }
  return out;
}

export function unionSorted(lists: ReadonlyArray<readonly number[]>): number[] {
  if (lists.length === 0) return [];
  if (lists.length === 1) return [...lists[0]!];
  const all = new Set<number>();
  for (const list of lists) for (const ref of list) all.add(ref);
  return [...all].sort((x, y) => x - y);
}

export class PostingsIndex {
  readonly #byName = new Map<string, Map<string, number[]>>();
  readonly #all: number[] = [];

  get seriesCount(): number {
    return this.#all.length;
  }

  /** Indexes series `ref`; refs must be added in increasing order. */
  add(ref: number, labels: Labels): void {
    assert(this.#all.length === 0 || ref > this.#all.at(-1)!, "postings: refs are added in increasing order");
    this.#all.push(ref);
    for (const [name, value] of labels) {
      let values = this.#byName.get(name);
      if (values === undefined) {
        values = new Map();
        this.#byName.set(name, values);
      }
      const list = values.get(value);
      if (list === undefined) values.set(value, [ref]);
      else list.push(ref);
    }
  }

  /** Drops `refs` (sorted) from every list: series gone with a truncated head. */
  remove(refs: readonly number[]): void {
    if (refs.length === 0) return;
    const gone = new Set(refs);
    const keep = (list: number[]) => list.filter((ref) => !gone.has(ref));
    const all = keep(this.#all);
    this.#all.length = 0;
    this.#all.push(...all);
    for (const [name, values] of this.#byName) {
      for (const [value, list] of values) {
        const kept = keep(list);
        if (kept.length === 0) values.delete(value);
        else values.set(value, kept);
      }
      if (values.size === 0) this.#byName.delete(name);
    }
  }

  /** Series refs matching every matcher, sorted. */
  select(matchers: readonly LabelMatcher[]): number[] {
    const positive: number[][] = [];
    const negative: number[][] = [];
    for (const m of matchers) {
      const values = this.#byName.get(m.name);
      if (m.matches("")) {
        // Lacking the label matches: remove the series whose value the matcher rejects.
        const rejected: number[][] = [];
        if (values) for (const [value, list] of values) if (!m.matches(value)) rejected.push(list);
        negative.push(unionSorted(rejected));
      } else {
        if (!values) return [];
        const fitting: number[][] = [];
        if (m.type === "=") {
          const list = values.get(m.value);
          if (list) fitting.push(list);
        } else {
          for (const [value, list] of values) if (m.matches(value)) fitting.push(list);
        }
        if (fitting.length === 0) return [];
        positive.push(unionSorted(fitting));
      }
    }
    positive.sort((x, y) => x.length - y.length);
    let result: number[] = positive.length === 0 ? [...this.#all] : positive[0]!;
    for (let i = 1; i < positive.length && result.length > 0; i++)
      result = intersectSorted(result, positive[i]!);
    for (const list of negative) result = subtractSorted(result, list);
    return result;
  }

  labelNames(): string[] {
    return [...this.#byName.keys()].sort();
  }

  labelValues(name: string): string[] {
    return [...(this.#byName.get(name)?.keys() ?? [])].sort();
  }

  /** Distinct values per label name: the operator's cardinality view (`/status/tsdb`). */
  valueCounts(): Map<string, number> {
    return new Map([...this.#byName].map(([name, values]) => [name, values.size]));
  }

  /** Series count per value of `name` (per metric when `name` is `__name__`). */
  seriesCountsByValue(name: string): Map<string, number> {
    return new Map([...(this.#byName.get(name) ?? [])].map(([value, list]) => [value, list.length]));
  }
}
