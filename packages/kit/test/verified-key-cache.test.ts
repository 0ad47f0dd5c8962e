/** The cache of verified API keys, on a manual clock: what it saves, what it delays, what it never keeps. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { apiKeyScheme, type PresentedApiKey } from "../src/api-key.ts";
import { ManualClock } from "../src/clock.ts";
import { seededRandom } from "../src/random.ts";
import { VerifiedKeyCache } from "../src/verified-key-cache.ts";

const scheme = apiKeyScheme("tk");
const issued = Array.from({ length: 3 }, () => scheme.issue(randomBytes));
/** Three well-formed keys (the format the table checks). */
const [keyA, keyB, keyC] = issued.map((k) => k.key) as [string, string, string];

/** A key table in memory: which keys are valid now, how often it was asked, and whether it fails. */
function keyTable() {
  const valid = new Set(issued.map((k) => k.hash));
  const table = {
    valid,
    /** Calls made (one per batch). */
    calls: 0,
    /** Keys checked, over every call. */
    checked: 0,
    failing: false,
    revoke: (key: string) => valid.delete(scheme.parse(key)!.hash),
    store: {
      parse: (key: string) => scheme.parse(key),
      verify: async (presented: readonly PresentedApiKey[]) => {
        table.calls += 1;
        table.checked += presented.length;
        await new Promise((resolve) => setImmediate(resolve));
        if (table.failing) throw new Error("database down");
        return presented.map((p) => (valid.has(p.hash) ? "acme" : undefined));
      },
    },
  };
  return table;
}

test("a key is checked at the database once per TTL; concurrent first uses share that one check", async () => {
  const clock = new ManualClock(1_000);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100 });
  const first = await Promise.all(Array.from({ length: 20 }, () => keys.get(keyA)));
  assert.ok(first.every((t) => t === "acme"));
  assert.equal(table.calls, 1, "20 concurrent first uses: one check");
  clock.advance(4_999);
  assert.equal(await keys.get(keyA), "acme");
  assert.equal(table.calls, 1, "still fresh: no check");
  clock.advance(1);
  assert.equal(await keys.get(keyA), "acme");
  assert.equal(table.calls, 2, "expired: checked again");
});

test("revocation bound: a key revoked elsewhere works here for at most the TTL; clear() ends it at once", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100 });
  await keys.get(keyA);
  await keys.get(keyB);
  table.revoke(keyA); // revoked at another replica, or in the database
  table.revoke(keyB);
  clock.advance(4_000);
  assert.equal(await keys.get(keyA), "acme", "within the bound: still trusted");
  clock.advance(1_000);
  assert.equal(await keys.get(keyA), undefined, "past the bound: refused");
  keys.clear(); // this replica's admin API revoked it
  assert.equal(await keys.get(keyB), undefined, "cleared: refused at once");
});

test("unknown keys are never remembered; the map holds at most maxEntries (oldest out first)", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 60_000, maxEntries: 2 });
  for (let i = 0; i < 50; i++) assert.equal(await keys.get(scheme.issue(randomBytes).key), undefined);
  assert.equal(keys.size, 0, "50 made-up keys: nothing kept");
  assert.equal(table.checked, 50);
  assert.equal(await keys.get("made-up"), undefined);
  assert.equal(table.checked, 50, "a malformed key never reaches the table");
  await keys.get(keyA);
  await keys.get(keyB);
  await keys.get(keyC);
  assert.equal(keys.size, 2);
  const before = table.calls;
  await keys.get(keyC);
  await keys.get(keyB);
  assert.equal(table.calls, before, "the two newest are served from memory");
  await keys.get(keyA);
  assert.equal(table.calls, before + 1, "the oldest was evicted: checked again");
});

test("a check that started before clear() does not refill the cache after it", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 60_000, maxEntries: 10 });
  const pending = keys.get(keyA);
  keys.clear();
  assert.equal(await pending, "acme");
  assert.equal(keys.size, 0);
});

test("refresh ahead: a key in use is re-checked in the background and never waits again; an idle key expires", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100, refreshJitter: 0 });
  await keys.get(keyA); // the first use: checked at 0
  await keys.get(keyB);
  assert.equal(table.calls, 2);
  clock.advance(2_499);
  assert.equal(await keys.refreshDue(), 0, "younger than refreshAfterMs (half the TTL): nothing due");
  clock.advance(1);
  await keys.get(keyA); // still in use at 2,500
  assert.equal(await keys.refreshDue(), 2, "both used within the TTL and half a TTL old");
  assert.equal(table.calls, 3, "one query for both");
  // The bench's shape: bursts every 5.1 s against a 5 s TTL — the burst at 5,100 is served from memory.
  clock.advance(2_600);
  assert.equal(await keys.get(keyA), "acme");
  assert.equal(table.calls, 3, "renewed at 2,500: fresh at 5,100");
  // 5,100: A (used now) is due again; B (last used at 0, more than a TTL ago) is not.
  assert.equal(await keys.refreshDue(), 1, "only the key used lately");
  clock.advance(2_500); // 7,600: B's entry (checked at 2,500) has expired
  const before = table.calls;
  assert.equal(await keys.get(keyB), "acme");
  assert.equal(table.calls, before + 1, "the idle key was left to expire: checked on the request");
});

test("refresh ahead spreads keys first checked together: re-checked apart, each once, all before three quarters of the TTL", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const many = Array.from({ length: 200 }, () => scheme.issue(randomBytes));
  for (const k of many) table.valid.add(k.hash);
  const keys = new VerifiedKeyCache(table.store, {
    clock,
    ttlMs: 5_000,
    maxEntries: 1_000,
    random: seededRandom("key-refresh-spread"),
  });
  await Promise.all(many.map((k) => keys.get(k.key))); // a warm-up: 200 keys checked at 0
  const tick = 125; // startRefreshing's period: refreshAfterMs / 20
  /** Keys re-checked per tick over one refresh cycle, every key used on each tick. */
  async function cycle(): Promise<number[]> {
    const perTick: number[] = [];
    for (let t = 0; t < 20; t++) {
      clock.advance(tick);
      await Promise.all(many.map((k) => keys.get(k.key)));
      perTick.push(await keys.refreshDue());
    }
    return perTick;
  }
  const first = await cycle(); // 125 … 2,500
  assert.equal(
    first.slice(0, 19).reduce((a, b) => a + b, 0),
    0,
    "nothing due before half the TTL",
  );
  const second = await cycle(); // 2,625 … 5,000
  assert.equal(first[19]! + second.reduce((a, b) => a + b, 0), 200, "every key re-checked once in the cycle");
  const busiest = Math.max(first[19]!, ...second);
  assert.ok(
    busiest <= 40,
    `at most a fifth of the keys in one tick (the old refresh: all 200 at once), got ${busiest}`,
  );
  assert.ok(
    second.slice(10).every((n) => n === 0),
    "all re-checked by 3,750 ms: a quarter of the TTL left",
  );
  const third = await cycle(); // 5,125 … 7,500: the next cycle stays spread, each key from its own re-check
  assert.ok(Math.max(...third) <= 40, `still spread a cycle later: ${third.join(" ")}`);
  assert.equal(table.checked, 200 + 200 + third.reduce((a, b) => a + b, 0), "no key asked on a request");
});

test("refresh ahead keeps the revocation bound: a refused re-check removes the entry; a failed one leaves it to expire at its TTL", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100, refreshJitter: 0 });
  await keys.get(keyA);
  await keys.get(keyB);
  clock.advance(3_000);
  table.revoke(keyA);
  table.failing = true;
  assert.equal(await keys.refreshDue(), 2);
  table.failing = false;
  assert.equal(await keys.get(keyA), "acme", "the check failed: trusted until its TTL");
  clock.advance(2_000); // 5,000: the last successful check (at 0) is a TTL old
  assert.equal(await keys.get(keyA), undefined, "past the bound: refused");
  table.revoke(keyB);
  await keys.get(keyC); // checked at 5,000
  clock.advance(2_500);
  table.revoke(keyC);
  assert.equal(await keys.refreshDue(), 1);
  assert.equal(keys.size, 0, "the re-check refused C: its entry is gone at once, before its TTL");
  assert.equal(await keys.get(keyC), undefined);
});

test("a re-check that failed is tried again at the next tick; one that succeeds then renews the entry", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100, refreshJitter: 0 });
  await keys.get(keyA);
  clock.advance(2_500);
  await keys.get(keyA);
  table.failing = true;
  assert.equal(await keys.refreshDue(), 1, "due at half the TTL: the database is down");
  assert.equal(await keys.refreshDue(), 0, "not again within the tick");
  table.failing = false;
  clock.advance(125); // startRefreshing's period: refreshAfterMs / 20
  assert.equal(await keys.refreshDue(), 1, "tried again");
  clock.advance(2_400); // 5,025: past the first check's TTL, within the renewed one
  const before = table.calls;
  assert.equal(await keys.get(keyA), "acme");
  assert.equal(table.calls, before, "renewed in the background: the request did not wait");
});

test("a re-check in flight across clear() does not refill the cache", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100, refreshJitter: 0 });
  await keys.get(keyA);
  clock.advance(3_000);
  const refreshing = keys.refreshDue();
  keys.clear();
  assert.equal(await refreshing, 1);
  assert.equal(keys.size, 0);
});

test("a TTL of 0 asks the store on every call; bad settings are refused", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const off = new VerifiedKeyCache(table.store, { clock, ttlMs: 0, maxEntries: 2 });
  assert.equal(await off.get(keyA), "acme");
  assert.equal(await off.get(keyA), "acme");
  assert.equal(table.calls, 2);
  assert.equal(await off.refreshDue(), 0);
  assert.throws(() => new VerifiedKeyCache(table.store, { clock, ttlMs: -1, maxEntries: 2 }), /ttlMs/);
  assert.throws(() => new VerifiedKeyCache(table.store, { clock, ttlMs: 1, maxEntries: 0 }), /maxEntries/);
  assert.throws(
    () => new VerifiedKeyCache(table.store, { clock, ttlMs: 1_000, maxEntries: 2, refreshAfterMs: 2_000 }),
    /refreshAfterMs/,
  );
  assert.throws(
    () => new VerifiedKeyCache(table.store, { clock, ttlMs: 1_000, maxEntries: 2, refreshJitter: 1.5 }),
    /refreshJitter/,
  );
});

test("refreshBatch: due keys are re-checked in calls of at most that many", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, {
    clock,
    ttlMs: 5_000,
    maxEntries: 100,
    refreshBatch: 2,
    refreshJitter: 0,
  });
  for (const key of [keyA, keyB, keyC]) await keys.get(key);
  clock.advance(3_000);
  for (const key of [keyA, keyB, keyC]) await keys.get(key);
  assert.equal(table.calls, 3, "three first uses checked, the second round served from memory");
  const before = table.calls;
  assert.equal(await keys.refreshDue(), 3);
  assert.equal(table.calls - before, 2, "3 due keys in calls of ≤ 2");
});

test("read: a fresh key's answer in the same turn (no promise), a promise only when the store is asked", async () => {
  const clock = new ManualClock(0);
  const table = keyTable();
  const keys = new VerifiedKeyCache(table.store, { clock, ttlMs: 5_000, maxEntries: 100 });
  const first = keys.read(keyA);
  assert.ok(first instanceof Promise, "not checked yet: the store is asked");
  assert.equal(await first, "acme");
  assert.equal(keys.read(keyA), "acme", "fresh: the value itself");
  assert.equal(keys.read("tk_not-a-key"), undefined, "malformed: refused at once, no store call");
  assert.equal(table.calls, 1);
  clock.advance(5_000);
  const expired = keys.read(keyA);
  assert.ok(expired instanceof Promise, "expired: asked again");
  assert.equal(await expired, "acme");
  assert.equal(table.calls, 2);
});
