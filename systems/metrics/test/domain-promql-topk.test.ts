/**
 * topk/bottomk keep the same ones of equal values as Prometheus 2.42 — a difference the
 * differential (`promql-differential.test.ts`) found on generated data, pinned here on a small
 * vector whose answers were read from a real Prometheus 2.42 (backfilled `m{s="00"} 1`, …):
 * its heap (pop + push) keeps the SECOND of two tied 1s in topk(3), where a stable sort would
 * keep the first.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { aggregate } from "../src/domain/promql-aggregate.ts";
import type { Aggregate } from "../src/domain/promql-ast.ts";

/** m{s="00"} … m{s="05"}, in Prometheus's series order. */
const VALUES = [1, 1, 2, 0, 0, 3];
const vector = VALUES.map((v, i) => ({ labels: labelsFromRecord({ s: String(i).padStart(2, "0") }), v }));

const kOf = (op: "topk" | "bottomk", k: number, samples = vector) =>
  aggregate(
    {
      kind: "aggregate",
      op,
      expr: { kind: "number", v: 0 } as unknown as Aggregate["expr"],
      param: undefined,
      grouping: [],
      without: false,
    },
    samples,
    { type: "scalar", v: k },
  ).map((s) => s.labels[0]![1]);

test("topk and bottomk keep the tied series Prometheus 2.42 keeps, best first", () => {
  // Prometheus 2.42: topk(3, m) → 05, 02, 01; topk(2, m) → 05, 02; bottomk(2, m) → 03, 04.
  assert.deepEqual(kOf("topk", 3), ["05", "02", "01"]);
  assert.deepEqual(kOf("topk", 2), ["05", "02"]);
  assert.deepEqual(kOf("bottomk", 2), ["03", "04"]);
  assert.deepEqual(kOf("topk", 1), ["05"]);
});

test("a NaN is evicted first and ranks last", () => {
  const withNaN = [{ labels: labelsFromRecord({ s: "nan" }), v: Number.NaN }, ...vector];
  assert.deepEqual(kOf("topk", 2, withNaN), ["05", "02"]);
  assert.deepEqual(kOf("topk", 8, withNaN).at(-1), "nan");
});
