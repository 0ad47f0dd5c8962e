import assert from "node:assert/strict";
import { test } from "node:test";
import { SingleFlight } from "../src/single-flight.ts";

function gate<T>() {
  let open: (value: T) => void = () => {};
  let fail: (error: Error) => void = () => {};
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

test("concurrent callers of one key share one call and its result", async () => {
  const flights = new SingleFlight<number>({ maxInFlightKeys: 10 });
  const g = gate<number>();
  let calls = 0;
  const work = () => {
    calls += 1;
    return g.promise;
  };
  const waiting = Array.from({ length: 50 }, () => flights.do("k", work));
  assert.equal(flights.inFlight, 1);
  g.open(7);
  assert.deepEqual(await Promise.all(waiting), Array(50).fill(7));
  assert.equal(calls, 1);
  assert.deepEqual(flights.stats, { started: 1, joined: 49, overflowed: 0 });
  assert.equal(flights.inFlight, 0, "a settled call is not remembered");
});

test("an error is shared by every waiter, and the next caller starts afresh", async () => {
  const flights = new SingleFlight<number>({ maxInFlightKeys: 10 });
  const g = gate<number>();
  const a = flights.do("k", () => g.promise);
  const b = flights.do("k", async () => 1);
  g.fail(new Error("db down"));
  await assert.rejects(a, /db down/);
  await assert.rejects(b, /db down/);
  assert.equal(await flights.do("k", async () => 2), 2);
});

test("a work that throws synchronously rejects like one that rejects", async () => {
  const flights = new SingleFlight<number>({ maxInFlightKeys: 1 });
  await assert.rejects(
    flights.do("k", () => {
      throw new Error("sync");
    }),
    /sync/,
  );
});

test("forget: the next caller starts a new call; the old call's waiters keep theirs and it does not evict the new one", async () => {
  const flights = new SingleFlight<string>({ maxInFlightKeys: 10 });
  const old = gate<string>();
  const fresh = gate<string>();
  const first = flights.do("k", () => old.promise);
  assert.equal(flights.forget("k"), true);
  assert.equal(flights.forget("k"), false);
  const second = flights.do("k", () => fresh.promise);
  const joined = flights.do("k", async () => "never");
  old.open("old");
  assert.equal(await first, "old");
  assert.equal(flights.inFlight, 1, "the old call settling leaves the new one in place");
  fresh.open("new");
  assert.deepEqual(await Promise.all([second, joined]), ["new", "new"]);
  assert.equal(flights.stats.started, 2);
});

test("past maxInFlightKeys new keys run uncoalesced instead of growing the map", async () => {
  const flights = new SingleFlight<string>({ maxInFlightKeys: 2 });
  const g = gate<void>();
  const held = [
    flights.do("a", () => g.promise.then(() => "a")),
    flights.do("b", () => g.promise.then(() => "b")),
  ];
  assert.equal(await flights.do("c", async () => "c"), "c");
  assert.equal(flights.stats.overflowed, 1);
  assert.equal(flights.inFlight, 2);
  g.open();
  assert.deepEqual(await Promise.all(held), ["a", "b"]);
});

test("maxInFlightKeys must be a sane count", () => {
  for (const bad of [0, 1.5, Number.NaN, 1e9]) {
    assert.throws(() => new SingleFlight({ maxInFlightKeys: bad }), RangeError);
  }
});
