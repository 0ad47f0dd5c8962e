/** The read path's cache of verified API keys, on a manual clock: what it saves and what it delays. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { VerifiedKeyCache } from "../src/store/key-cache.ts";

/** A store of keys whose answers can be changed (a revocation) and whose lookups are counted. */
function fakeKeys(owners: Record<string, bigint>) {
  const calls: string[] = [];
  let gate: Promise<void> | undefined;
  return {
    owners,
    calls,
    hold(): () => void {
      let open!: () => void;
      gate = new Promise((resolve) => {
        open = resolve;
      });
      return () => {
        gate = undefined;
        open();
      };
    },
    verify: async (key: string): Promise<bigint | undefined> => {
      calls.push(key);
      const answer = owners[key];
      await gate;
      return answer;
    },
  };
}

test("a verified key is looked up once per TTL; after the TTL a revocation elsewhere is seen", async () => {
  const clock = new ManualClock(0);
  const store = fakeKeys({ fdk_a: 7n });
  const cache = new VerifiedKeyCache({ verify: store.verify, clock, ttlMs: 5_000, maxKeys: 10 });
  assert.equal(await cache.userOf("fdk_a"), 7n);
  clock.advance(4_999);
  assert.equal(await cache.userOf("fdk_a"), 7n);
  assert.equal(store.calls.length, 1, "the second read is served from memory");
  delete store.owners.fdk_a; // revoked through another process: this one still trusts it within the TTL
  assert.equal(await cache.userOf("fdk_a"), 7n);
  clock.advance(1);
  assert.equal(await cache.userOf("fdk_a"), undefined, "past the TTL the store is asked again");
  assert.equal(await cache.userOf("fdk_a"), undefined);
  assert.equal(store.calls.length, 3, "a refused key is never cached: each try asks the store");
});

test("clear() (a revocation through this process) forgets at once, even a lookup that was in flight", async () => {
  const clock = new ManualClock(0);
  const store = fakeKeys({ fdk_a: 7n, fdk_b: 8n });
  const cache = new VerifiedKeyCache({ verify: store.verify, clock, ttlMs: 5_000, maxKeys: 10 });
  assert.equal(await cache.userOf("fdk_a"), 7n);
  const release = store.hold();
  const inFlight = cache.userOf("fdk_b"); // began before the revocation: answers 8n, must not be kept
  delete store.owners.fdk_a;
  delete store.owners.fdk_b;
  cache.clear();
  release();
  assert.equal(await inFlight, 8n);
  assert.equal(await cache.userOf("fdk_a"), undefined);
  assert.equal(await cache.userOf("fdk_b"), undefined);
});

test("bounded: past maxKeys the oldest key goes; a TTL of 0 asks the store every time", async () => {
  const clock = new ManualClock(0);
  const store = fakeKeys({ k1: 1n, k2: 2n, k3: 3n });
  const cache = new VerifiedKeyCache({ verify: store.verify, clock, ttlMs: 5_000, maxKeys: 2 });
  for (const key of ["k1", "k2", "k3"]) await cache.userOf(key);
  store.calls.length = 0;
  await cache.userOf("k3");
  await cache.userOf("k2");
  assert.deepEqual(store.calls, [], "the two newest are kept");
  await cache.userOf("k1");
  assert.deepEqual(store.calls, ["k1"], "the oldest was evicted");
  const off = new VerifiedKeyCache({ verify: store.verify, clock, ttlMs: 0, maxKeys: 2 });
  store.calls.length = 0;
  await off.userOf("k1");
  await off.userOf("k1");
  assert.equal(store.calls.length, 2);
});

test("with refreshAfterMs an entry past it is served and checked again in the background: a steady reader never waits, a revocation still shows within the TTL", async () => {
  const clock = new ManualClock(0);
  const store = fakeKeys({ fdk_a: 7n });
  const cache = new VerifiedKeyCache({
    verify: store.verify,
    clock,
    ttlMs: 5_000,
    maxKeys: 10,
    refreshAfterMs: 2_500,
  });
  assert.equal(await cache.userOf("fdk_a"), 7n);
  clock.advance(2_000);
  assert.equal(await cache.userOf("fdk_a"), 7n);
  assert.equal(store.calls.length, 1, "young entry: no check");
  clock.advance(1_000); // 3 000 ms old: served, and checked behind the read
  const release = store.hold();
  assert.equal(await cache.userOf("fdk_a"), 7n, "served without waiting for the check");
  assert.equal(await cache.userOf("fdk_a"), 7n);
  assert.equal(store.calls.length, 2, "one background check per key at a time");
  release();
  await new Promise((resolve) => setImmediate(resolve));
  clock.advance(4_000); // 7 000 ms after the first check, 4 000 after the renewal: still valid
  delete store.owners.fdk_a; // revoked elsewhere
  assert.equal(await cache.userOf("fdk_a"), 7n, "within the TTL: served, and checked behind the read");
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(await cache.userOf("fdk_a"), undefined, "the background check dropped the revoked key");
});
