/**
 * FS-15's window (workers/processor-window.ts): floor(rate) permits, each held from before its
 * call until a second after the call ends — so at most `rate` calls land at the processor in
 * any second whatever their latency; waiters served in arrival order; below 1/s one permit
 * held 1/rate seconds. Driven with a fake timer: the release runs when the test says.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ProcessorWindow } from "../src/workers/processor-window.ts";

test("FS-15 the window: floor(rate) permits, held a second after each call; waiters in order; below 1/s one permit held 1/rate s", async () => {
  const releases: { fn: () => void; ms: number }[] = [];
  const window = new ProcessorWindow({ ratePerS: 2.7, schedule: (fn, ms) => releases.push({ fn, ms }) });
  assert.deepEqual(
    [window.permits, window.holdMs],
    [2, 1_010],
    "a second, and 10 ms for a timer firing early",
  );
  const order: string[] = [];
  const call = (name: string) => window.run(async () => void order.push(name));
  await Promise.all([call("a"), call("b")]);
  assert.equal(window.taken, 2, "ended calls keep their permits until released");
  const c = call("c");
  const d = call("d");
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ["a", "b"], "c and d wait: both permits are held");
  releases.shift()!.fn();
  await c;
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(order, ["a", "b", "c"], "one release lets the first waiter through");
  releases.shift()!.fn();
  await d;
  assert.deepEqual(order, ["a", "b", "c", "d"]);
  for (const r of releases.splice(0)) r.fn();
  assert.equal(window.taken, 0);
  // A failed call keeps its permit for the hold too: it may have reached the processor.
  await assert.rejects(window.run(async () => Promise.reject(new Error("reset"))));
  assert.equal(window.taken, 1);
  assert.deepEqual(
    [new ProcessorWindow({ ratePerS: 0.5 }).permits, new ProcessorWindow({ ratePerS: 0.5 }).holdMs],
    [1, 2_010],
  );
  assert.throws(() => new ProcessorWindow({ ratePerS: 0 }), RangeError);
});
