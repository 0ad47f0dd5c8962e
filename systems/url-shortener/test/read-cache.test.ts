/**
 * The read path's in-process LRU (US-13, US-14) on a store that counts its reads: a hot code
 * is read from the store once, then served from memory; when the LRU is full the least
 * recently used code goes and the hot ones stay; bounded in bytes as well as entries; an
 * entry never outlives its link's expiry; concurrent misses of one code share one read.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import type { ResolvedLink } from "../src/domain/redirect-decision.ts";
import { CachedLinkReader, type LinkResolver } from "../src/store/cached-link-reader.ts";

function link(target: string, expiresAtMs: number | null = null): ResolvedLink {
  return { target, status: 302, cacheMaxAgeS: 300, forwardQuery: true, expiresAtMs, disabled: false };
}

/** A store of `codes`, counting reads per code, each read answered after a macrotask. */
function countingStore(links: Record<string, ResolvedLink>) {
  const reads = new Map<string, number>();
  const store: LinkResolver = {
    async resolve(_domain, code) {
      reads.set(code, (reads.get(code) ?? 0) + 1);
      await new Promise((resolve) => setImmediate(resolve));
      return links[code];
    },
  };
  return { store, reads };
}

const clock = () => new ManualClock(Date.UTC(2026, 0, 1));

test("US-13 the redirect reads the LRU first and the store by key only on a miss: 1,000 reads of a hot code, 1 store read", async () => {
  const { store, reads } = countingStore({ hot: link("https://example.com/hot") });
  const reader = new CachedLinkReader(store, {
    maxEntries: 10,
    maxBytes: 1 << 20,
    ttlMs: 60_000,
    clock: clock(),
  });
  for (let i = 0; i < 1_000; i++)
    assert.equal((await reader.resolve("d", "hot"))?.target, "https://example.com/hot");
  assert.equal(reads.get("hot"), 1);
  assert.equal(reader.stats.hits, 999);
  assert.equal(reader.stats.misses, 1);
  assert.equal(reader.stats.hitRatio, 0.999);
});

test("US-14 when the LRU is full the least recently used code goes and the hot codes stay", async () => {
  const links = Object.fromEntries(
    ["a", "b", "c", "d"].map((code) => [code, link(`https://example.com/${code}`)]),
  );
  const { store, reads } = countingStore(links);
  const reader = new CachedLinkReader(store, {
    maxEntries: 3,
    maxBytes: 1 << 20,
    ttlMs: 60_000,
    clock: clock(),
  });
  await reader.resolve("x", "a");
  await reader.resolve("x", "b");
  await reader.resolve("x", "c");
  await reader.resolve("x", "a"); // a is hot again; b is now the least recently used
  await reader.resolve("x", "d"); // full: b goes
  assert.equal(reader.stats.entries, 3);
  await reader.resolve("x", "a");
  await reader.resolve("x", "c");
  await reader.resolve("x", "d");
  assert.deepEqual([reads.get("a"), reads.get("c"), reads.get("d")], [1, 1, 1], "the hot codes stayed");
  await reader.resolve("x", "b");
  assert.equal(reads.get("b"), 2, "the least recently used code was evicted and read again");
});

test("US-14 the LRU is bounded in bytes too: long targets evict sooner than the entry bound says", async () => {
  const long = "https://example.com/" + "x".repeat(4_000);
  const links = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, link(`${long}${i}`)]));
  const { store } = countingStore(links);
  const reader = new CachedLinkReader(store, {
    maxEntries: 1_000,
    maxBytes: 40_000,
    ttlMs: 60_000,
    clock: clock(),
  });
  for (let i = 0; i < 20; i++) await reader.resolve("x", `c${i}`);
  assert.ok(reader.stats.bytes <= 40_000, `${reader.stats.bytes} bytes`);
  assert.ok(reader.stats.entries < 20 && reader.stats.entries >= 4, `${reader.stats.entries} entries`);
});

test("US-12 an LRU entry never outlives its link: it is dropped at the expiry, before the LRU's own lifetime", async () => {
  const manual = clock();
  const expiresAtMs = manual.nowMs() + 5_000;
  const { store, reads } = countingStore({ soon: link("https://example.com/soon", expiresAtMs) });
  const reader = new CachedLinkReader(store, {
    maxEntries: 10,
    maxBytes: 1 << 20,
    ttlMs: 60_000,
    clock: manual,
  });
  await reader.resolve("x", "soon");
  manual.advance(4_000);
  await reader.resolve("x", "soon");
  assert.equal(reads.get("soon"), 1);
  manual.advance(1_500);
  await reader.resolve("x", "soon");
  assert.equal(reads.get("soon"), 2, "past the expiry the store is asked again (and the decision says 410)");
});

test("concurrent misses of one code share one store read; unknown codes are not cached", async () => {
  const { store, reads } = countingStore({ cold: link("https://example.com/cold") });
  const reader = new CachedLinkReader(store, {
    maxEntries: 10,
    maxBytes: 1 << 20,
    ttlMs: 60_000,
    clock: clock(),
  });
  await Promise.all(Array.from({ length: 50 }, () => reader.resolve("x", "cold")));
  assert.equal(reads.get("cold"), 1);
  await reader.resolve("x", "nope");
  await reader.resolve("x", "nope");
  assert.equal(reads.get("nope"), 2);
  assert.equal(reader.stats.entries, 1);
});
