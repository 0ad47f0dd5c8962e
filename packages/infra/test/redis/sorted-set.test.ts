import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { ExpiryQueue } from "../../src/redis/expiry-queue.ts";
import { parseBound, SortedSet } from "../../src/redis/sorted-set.ts";

/** The obvious model: a plain map, sorted on every read. */
function modelOrder(model: Map<string, number>): [string, number][] {
  return [...model].sort(([ma, sa], [mb, sb]) => sa - sb || (ma < mb ? -1 : ma > mb ? 1 : 0));
}

const operation = fc.oneof(
  fc.record({
    op: fc.constant("add"),
    member: fc.string({ maxLength: 2 }),
    score: fc.integer({ min: -5, max: 5 }),
  }),
  fc.record({ op: fc.constant("remove"), member: fc.string({ maxLength: 2 }) }),
  fc.record({
    op: fc.constant("removeByScore"),
    min: fc.integer({ min: -6, max: 6 }),
    max: fc.integer({ min: -6, max: 6 }),
  }),
);

test("SortedSet keeps the (score, member) order of a naive model through any operations", () => {
  fc.assert(
    fc.property(
      fc.array(operation, { maxLength: 60 }),
      fc.integer({ min: -6, max: 6 }),
      fc.integer({ min: -6, max: 6 }),
      (ops, low, high) => {
        const set = new SortedSet();
        const model = new Map<string, number>();
        for (const step of ops) {
          if (step.op === "add") {
            assert.equal(set.add(step.member, step.score), !model.has(step.member));
            model.set(step.member, step.score);
          } else if (step.op === "remove") {
            assert.equal(set.remove(step.member), model.delete(step.member));
          } else {
            const doomed = [...model].filter(([, s]) => s >= step.min && s <= step.max);
            assert.equal(set.removeByScore(step.min, step.max), doomed.length);
            for (const [member] of doomed) model.delete(member);
          }
        }
        const ordered = modelOrder(model);
        assert.deepEqual(
          set.rangeByRank(0, -1),
          ordered.map(([m]) => m),
        );
        const inRange = ordered.filter(([, s]) => s > low && s <= high).map(([m]) => m);
        assert.deepEqual(set.rangeByScore(`(${low}`, high), inRange);
        assert.equal(set.countByScore(`(${low}`, high), inRange.length);
        for (const [member, score] of model) assert.equal(set.score(member), score);
      },
    ),
  );
});

test("score bounds parse as ZRANGEBYSCORE writes them", () => {
  assert.deepEqual(parseBound("(5"), { value: 5, exclusive: true });
  assert.deepEqual(parseBound("-inf"), { value: -Infinity, exclusive: false });
  assert.deepEqual(parseBound("+inf"), { value: Infinity, exclusive: false });
  assert.throws(() => parseBound("abc"), /not a float/);
  assert.throws(() => parseBound("("), /not a float/);
  assert.throws(() => new SortedSet().add("m", Number.NaN), /NaN/);
});

test("ExpiryQueue pops due entries earliest first and compacts to the live ones", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 1_000 }), { maxLength: 200 }), (times) => {
      const queue = new ExpiryQueue();
      for (const [i, atMs] of times.entries()) queue.push(atMs, `k${i}`);
      const popped: number[] = [];
      for (let entry = queue.popDue(500); entry; entry = queue.popDue(500)) popped.push(entry.atMs);
      assert.deepEqual(
        popped,
        times.filter((t) => t < 500).sort((a, b) => a - b),
      );
      queue.compact((entry) => entry.atMs % 2 === 0);
      assert.equal(queue.size, times.filter((t) => t >= 500 && t % 2 === 0).length);
      const rest: number[] = [];
      for (let entry = queue.popDue(2_000); entry; entry = queue.popDue(2_000)) rest.push(entry.atMs);
      assert.deepEqual(
        rest,
        [...rest].sort((a, b) => a - b),
      );
    }),
  );
});
