import assert from "node:assert/strict";
import { test } from "node:test";
import { OriginLru } from "../../src/http/origin-lru.ts";

function pools(maxOrigins: number) {
  const events: string[] = [];
  const busy = new Set<string>();
  const lru = new OriginLru<{ origin: string }>({
    maxOrigins,
    open: (origin) => {
      events.push(`open ${origin}`);
      return { origin };
    },
    busy: (pool) => busy.has(pool.origin),
    close: (pool) => events.push(`close ${pool.origin}`),
    destroy: (pool) => events.push(`destroy ${pool.origin}`),
  });
  const at = (n: number) => new URL(`http://127.0.0.1:${8000 + n}/path?x=${n}`);
  return { lru, events, busy, at };
}

test("one pool per origin, the least recently used idle one closed past the bound", () => {
  const { lru, events, at } = pools(2);
  const first = lru.for(at(1));
  assert.equal(lru.for(new URL("http://127.0.0.1:8001/other")), first, "same origin, same pool");
  lru.for(at(2));
  lru.for(at(1)); // 1 is now the most recent
  lru.for(at(3));
  assert.deepEqual(events, [
    "open http://127.0.0.1:8001",
    "open http://127.0.0.1:8002",
    "close http://127.0.0.1:8002",
    "open http://127.0.0.1:8003",
  ]);
  assert.equal(lru.size, 2);
});

test("a busy pool is never evicted: the next idle one goes, or the bound is passed", () => {
  const { lru, events, busy, at } = pools(2);
  lru.for(at(1));
  lru.for(at(2));
  busy.add("http://127.0.0.1:8001");
  lru.for(at(3));
  assert.ok(events.includes("close http://127.0.0.1:8002"));
  busy.add("http://127.0.0.1:8003");
  lru.for(at(4)); // both held pools busy: over the bound rather than kill calls in flight
  assert.equal(lru.size, 3);
  assert.ok(!events.some((e) => e.startsWith("close http://127.0.0.1:8001")));
  busy.clear();
  lru.for(at(5)); // idle again: evicted down to the bound, oldest first
  assert.equal(lru.size, 2);
  lru.destroyAll();
  assert.equal(lru.size, 0);
  assert.deepEqual(
    events.filter((e) => e.startsWith("destroy")),
    ["destroy http://127.0.0.1:8004", "destroy http://127.0.0.1:8005"],
  );
  assert.throws(() => pools(0), /maxOrigins/);
});

test("the same URL object again is the same pool, still most recent; changed in place, it is looked up anew", () => {
  const { lru, events, at } = pools(2);
  const endpoint = at(1);
  const first = lru.for(endpoint);
  assert.equal(lru.for(endpoint), first);
  lru.for(at(2));
  assert.equal(lru.for(endpoint), first, "back to the first origin: its pool, now the most recent");
  lru.for(at(3)); // evicts 2, the least recent, not 1
  assert.deepEqual(events.slice(-2), ["close http://127.0.0.1:8002", "open http://127.0.0.1:8003"]);
  endpoint.port = "8004";
  const moved = lru.for(endpoint);
  assert.notEqual(moved, first);
  assert.equal(events.at(-1), "open http://127.0.0.1:8004");
  lru.destroyAll();
  assert.notEqual(lru.for(endpoint), moved, "after destroyAll no destroyed pool is handed out");
  assert.equal(events.at(-1), "open http://127.0.0.1:8004");
});
