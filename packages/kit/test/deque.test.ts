import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { Deque } from "../src/deque.ts";

test("both ends, peeks, indexed reads, drain and clear", () => {
  const q = new Deque<string>(0);
  assert.equal(q.shift(), undefined);
  assert.equal(q.pop(), undefined);
  assert.equal(q.peek(), undefined);
  assert.equal(q.peekBack(), undefined);
  q.push("b");
  q.push("c");
  q.unshift("a");
  assert.deepEqual([...q], ["a", "b", "c"]);
  assert.deepEqual(
    [q.peek(), q.peekBack(), q.at(1), q.at(3), q.at(-1)],
    ["a", "c", "b", undefined, undefined],
  );
  assert.equal(q.pop(), "c");
  assert.equal(q.shift(), "a");
  q.push("d");
  assert.deepEqual(q.drain(), ["b", "d"]);
  assert.equal(q.length, 0);
  q.push("e");
  q.clear();
  assert.equal(q.length, 0);
  assert.equal(q.peek(), undefined);
});

test("property: any interleaving of the four ends' operations matches an array", () => {
  type Op = { op: "push" | "unshift"; value: number } | { op: "shift" | "pop" } | { op: "at"; index: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constantFrom("push" as const, "unshift" as const), value: fc.integer() }),
    fc.record({ op: fc.constantFrom("shift" as const, "pop" as const) }),
    fc.record({ op: fc.constant("at" as const), index: fc.integer({ min: -2, max: 40 }) }),
  );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 9 }), fc.array(op, { maxLength: 300 }), (capacity, ops) => {
      const q = new Deque<number>(capacity);
      const model: number[] = [];
      for (const o of ops) {
        if (o.op === "push") {
          q.push(o.value);
          model.push(o.value);
        } else if (o.op === "unshift") {
          q.unshift(o.value);
          model.unshift(o.value);
        } else if (o.op === "shift") assert.equal(q.shift(), model.shift());
        else if (o.op === "pop") assert.equal(q.pop(), model.pop());
        else if (o.op === "at") {
          assert.equal(q.at(o.index), o.index >= 0 ? model[o.index] : undefined);
          assert.deepEqual(q.slice(o.index), model.slice(Math.max(0, o.index)));
        }
        assert.equal(q.length, model.length);
        assert.equal(q.peek(), model[0]);
        assert.equal(q.peekBack(), model[model.length - 1]);
      }
      assert.deepEqual([...q], model);
    }),
  );
});
