import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { AssertionError } from "../src/assert.ts";
import { type HeapNode, IndexedHeap } from "../src/indexed-heap.ts";

interface Node extends HeapNode {
  id: number;
  p: number;
}

test("update fixes a node whose priority moved either way; remove takes any node out", () => {
  const heap = new IndexedHeap<Node>((a, b) => a.p < b.p);
  const nodes = [5, 3, 8].map((p, id) => ({ id, p, heapIndex: -1 }));
  for (const node of nodes) heap.push(node);
  assert.equal(heap.peek()?.id, 1);
  nodes[2]!.p = 0;
  heap.update(nodes[2]!);
  assert.equal(heap.peek()?.id, 2);
  heap.remove(nodes[2]!);
  assert.equal(nodes[2]!.heapIndex, -1);
  assert.deepEqual([heap.pop()?.id, heap.pop()?.id, heap.pop()], [1, 0, undefined]);
});

test("misuse is a broken invariant: pushing twice, removing or updating a node of no heap", () => {
  const heap = new IndexedHeap<Node>((a, b) => a.p < b.p);
  const node = { id: 0, p: 1, heapIndex: -1 };
  heap.push(node);
  assert.throws(() => heap.push(node), AssertionError);
  const stranger = { id: 1, p: 1, heapIndex: 0 };
  assert.throws(() => heap.remove(stranger), AssertionError);
  assert.throws(() => heap.update(stranger), AssertionError);
});

test("property: push, pop, update and remove match a model that sorts on every pop", () => {
  type Op =
    | { op: "push"; p: number }
    | { op: "pop" }
    | { op: "update"; pick: number; p: number }
    | { op: "remove"; pick: number };
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant("push" as const), p: fc.integer({ min: 0, max: 100 }) }),
    fc.record({ op: fc.constant("pop" as const) }),
    fc.record({ op: fc.constant("update" as const), pick: fc.nat(), p: fc.integer({ min: 0, max: 100 }) }),
    fc.record({ op: fc.constant("remove" as const), pick: fc.nat() }),
  );
  fc.assert(
    fc.property(fc.array(op, { maxLength: 150 }), (ops) => {
      // Ties broken by id so the model and the heap agree on one order.
      const heap = new IndexedHeap<Node>((a, b) => a.p < b.p || (a.p === b.p && a.id < b.id));
      const inHeap: Node[] = [];
      let nextId = 0;
      for (const o of ops) {
        if (o.op === "push") {
          const node = { id: nextId++, p: o.p, heapIndex: -1 };
          heap.push(node);
          inHeap.push(node);
        } else if (o.op === "pop") {
          inHeap.sort((a, b) => a.p - b.p || a.id - b.id);
          const want = inHeap.shift();
          assert.equal(heap.pop(), want);
        } else if (inHeap.length > 0) {
          const node = inHeap[o.pick % inHeap.length]!;
          if (o.op === "update") {
            node.p = o.p;
            heap.update(node);
          } else {
            heap.remove(node);
            inHeap.splice(inHeap.indexOf(node), 1);
          }
        }
        assert.equal(heap.length, inHeap.length);
      }
    }),
  );
});
