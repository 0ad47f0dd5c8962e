import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { AssertionError } from "../src/assert.ts";
import { MinHeap } from "../src/min-heap.ts";

test("pop returns entries in key order; peekKey and peekValue show the smallest", () => {
  const heap = new MinHeap<string>();
  assert.equal(heap.pop(), undefined);
  assert.equal(heap.peekKey(), undefined);
  assert.equal(heap.peekValue(), undefined);
  heap.push(30, "c");
  heap.push(10, "a");
  heap.push(20, "b");
  assert.equal(heap.size, 3);
  assert.equal(heap.peekKey(), 10);
  assert.equal(heap.peekValue(), "a");
  assert.deepEqual(
    [heap.pop(), heap.pop(), heap.pop(), heap.pop()],
    [{ key: 10, value: "a" }, { key: 20, value: "b" }, { key: 30, value: "c" }, undefined],
  );
});

test("a NaN key is refused: it would break the order for every entry", () => {
  assert.throws(() => new MinHeap<number>().push(Number.NaN, 1), AssertionError);
});

test("property: any interleaving of push, pop and retain matches a sorted-array model", () => {
  type Op = { op: "push"; key: number } | { op: "pop" } | { op: "retain"; mod: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant("push" as const), key: fc.integer({ min: -50, max: 50 }) }),
    fc.record({ op: fc.constant("pop" as const) }),
    fc.record({ op: fc.constant("retain" as const), mod: fc.integer({ min: 2, max: 4 }) }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
      const heap = new MinHeap<number>();
      let model: number[] = []; // values; the value is the key, so ties are indistinguishable
      for (const o of ops) {
        if (o.op === "push") {
          heap.push(o.key, o.key);
          model.push(o.key);
          model.sort((a, b) => a - b);
        } else if (o.op === "pop") {
          const got = heap.pop();
          const want = model.shift();
          assert.deepEqual(got, want === undefined ? undefined : { key: want, value: want });
        } else {
          heap.retain((key) => Math.abs(key) % o.mod !== 0);
          model = model.filter((key) => Math.abs(key) % o.mod !== 0);
        }
        assert.equal(heap.size, model.length);
        assert.equal(heap.peekKey(), model[0]);
      }
    }),
  );
});

test("clear empties the heap", () => {
  const heap = new MinHeap<number>();
  heap.push(1, 1);
  heap.clear();
  assert.equal(heap.size, 0);
  assert.equal(heap.pop(), undefined);
});
