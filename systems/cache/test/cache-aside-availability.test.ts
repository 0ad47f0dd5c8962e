/**
 * CA-23: the text's trade-off — speed and availability over consistency, the database
 * is the truth. On a real node and the client library:
 *
 * - availability: the cache node goes away (stopped, then silent) and every read is
 *   still answered, from the database, within the client's timeout; once a node is
 *   back the values are cached again;
 * - consistency traded for speed: a database write the cache was not told about is
 *   served stale until its TTL ends, and the write path's `invalidate` is what makes the
 *   next read fresh.
 *
 * (The sizing half of CA-23, "take the larger", is in capacity-estimate.test.ts.)
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { startFaultProxy } from "@casebook/lab/fault-proxy";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** The database: one row per key, counting the reads that reach it. */
class Database {
  readonly rows = new Map<string, string>();
  reads = 0;
  read = async (key: string): Promise<string> => {
    this.reads += 1;
    return this.rows.get(key) ?? "absent";
  };
}

const KEYS = Array.from({ length: 20 }, (_, i) => `event:${i}`);

describe("CA-23 the cache is an optimisation, the database the truth", () => {
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  test("CA-23 availability: with the cache node stopped every read is answered by the database; a node back on the address caches again", async () => {
    let node: TestNode = await startCacheNode();
    const port = node.port;
    const client = CacheClient.ring({
      nodes: [`127.0.0.1:${port}`],
      connectTimeoutMs: 500,
      commandTimeoutMs: 500,
    });
    closers.push(() => client.close());
    const db = new Database();
    for (const key of KEYS) db.rows.set(key, `row of ${key}`);
    const pages = new CacheAside<string>({ client, ttlS: 300, jitter: 0, lease: false, earlyRefreshBeta: 0 });

    for (const key of KEYS) await pages.getOrLoad(key, () => db.read(key));
    for (const key of KEYS) assert.equal(await pages.getOrLoad(key, () => db.read(key)), `row of ${key}`);
    assert.equal(db.reads, KEYS.length, "warm: the second pass is all hits");

    await node.close();
    const errorsBefore = pages.stats["cache-error"];
    for (const key of KEYS) assert.equal(await pages.getOrLoad(key, () => db.read(key)), `row of ${key}`);
    assert.equal(db.reads, 2 * KEYS.length, "cache down: every read went to the database");
    assert.ok(pages.stats["cache-error"] - errorsBefore >= KEYS.length, "each failed cache read is counted");

    node = await startCacheNode({ server: { port } }); // empty: a restarted cache node holds nothing
    closers.push(() => node.close());
    const readsBack = db.reads;
    for (const key of KEYS) await pages.getOrLoad(key, () => db.read(key));
    for (const key of KEYS) assert.equal(await pages.getOrLoad(key, () => db.read(key)), `row of ${key}`);
    assert.equal(db.reads - readsBack, KEYS.length, "back: one load per key, then hits");
    assert.equal(node.keyspace.size, KEYS.length);
  });

  test("CA-23 availability: a cache node that stops answering costs a read its command timeouts (the read, the write-back), never the answer", async () => {
    const node = await startCacheNode();
    closers.push(() => node.close());
    const proxy = await startFaultProxy({ upstream: { host: "127.0.0.1", port: node.port } });
    closers.push(() => proxy.close());
    const timeoutMs = 300;
    const client = CacheClient.ring({
      nodes: [`127.0.0.1:${proxy.port}`],
      connectTimeoutMs: timeoutMs,
      commandTimeoutMs: timeoutMs,
    });
    closers.push(() => client.close());
    const db = new Database();
    db.rows.set("event:42", "Opening night");
    const pages = new CacheAside<string>({ client, ttlS: 300, jitter: 0, lease: false, earlyRefreshBeta: 0 });
    assert.equal(await pages.getOrLoad("event:42", () => db.read("event:42")), "Opening night");

    proxy.blackhole(true); // the node is alive but nothing it sends arrives: a stalled host
    const started = performance.now();
    assert.equal(await pages.getOrLoad("event:42", () => db.read("event:42")), "Opening night");
    const tookMs = performance.now() - started;
    assert.equal(db.reads, 2, "answered by the database");
    assert.ok(tookMs >= timeoutMs * 0.9, `waited for the read's timeout (${tookMs.toFixed(0)} ms)`);
    assert.ok(tookMs < timeoutMs * 10, `bounded by it (${tookMs.toFixed(0)} ms)`);
  });

  test("CA-23 consistency traded: a database write the cache is not told of is served stale until the TTL ends; invalidate() on the write path ends it at once", async () => {
    const clock = new ManualClock(Date.parse("2026-11-30T12:00:00Z"));
    const node = await startCacheNode({ clock });
    closers.push(() => node.close());
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    closers.push(() => client.close());
    const db = new Database();
    const pages = new CacheAside<string>({
      client,
      clock,
      ttlS: 300,
      jitter: 0,
      lease: false,
      earlyRefreshBeta: 0,
    });
    const read = (key: string) => pages.getOrLoad(key, () => db.read(key));

    db.rows.set("price:1", "100");
    assert.equal(await read("price:1"), "100");
    db.rows.set("price:1", "120"); // written to the database only
    clock.advance(299_000);
    assert.equal(await read("price:1"), "100", "stale inside the TTL: the speed bought with consistency");
    clock.advance(1_001); // past the 300 s (a key expires once the clock is beyond its time)
    assert.equal(await read("price:1"), "120", "the TTL bounds the staleness");

    db.rows.set("price:2", "7");
    assert.equal(await read("price:2"), "7");
    db.rows.set("price:2", "9");
    await pages.invalidate("price:2"); // the write path's delete
    assert.equal(await read("price:2"), "9", "fresh at once after invalidation");
  });
});
