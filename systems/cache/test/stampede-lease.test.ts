/**
 * CA-20 / CA-21, the stampede: a hot key is missing and 1,000 requests want it at once,
 * from 10 client instances standing for 10 application servers (each with its own
 * connections, its own coalescing and its own lease tokens; all in this one test process)
 * × 100 concurrent calls, against a cache node. The "database" is a Map behind a load
 * counter; it answers once all 1,000 requests have seen their miss (so the misses are
 * concurrent by construction, even on a loaded machine), after 20 ms. With the lease (SET lock:key token NX PX, losers
 * polling 20 × 25 ms) and in-process coalescing: 1 database load. Without either: one
 * load per request, ~1,000. The table of all four combinations is printed.
 *
 * Plus the lease loop's own rules (CA-21): re-read after acquiring, release only with
 * our token, poll then fall through to a load; and stale-while-revalidate (CA-20):
 * readers past freshness get the stale value while exactly one refresh runs.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { CacheAside, type CacheAsideOptions } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import { StampedeLease } from "../src/client/stampede-lease.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/**
 * The database: rows in a Map, every read counted. A read answers once `allMissed` has
 * resolved (every request of the stampede has seen its miss: "1,000 concurrent misses"
 * by construction, whatever the machine's load; bounded by `gateTimeoutMs`), then after
 * `latencyMs`, the query's own time.
 */
function fakeDatabase(latencyMs: number, allMissed: Promise<void>, gateTimeoutMs = 5_000) {
  const rows = new Map([["event:42", { id: 42, title: "Opening night", seats: 1_800 }]]);
  const db = {
    loads: 0,
    async load(key: string) {
      db.loads += 1;
      await Promise.race([allMissed, sleep(gateTimeoutMs)]);
      await sleep(latencyMs);
      return rows.get(key)!;
    },
  };
  return db;
}

interface StampedeResult {
  loads: number;
  waitHits: number;
  leaseTimeouts: number;
}

async function stampede(
  port: number,
  key: string,
  protection: { lease: boolean; coalesce: boolean },
  shape = { clients: 10, callsEach: 100 },
): Promise<StampedeResult> {
  const node = `127.0.0.1:${port}`;
  const total = shape.clients * shape.callsEach;
  let misses = 0;
  let everyoneMissed: () => void = () => {};
  const db = fakeDatabase(20, new Promise<void>((resolve) => (everyoneMissed = resolve)));
  const clients = Array.from({ length: shape.clients }, () => CacheClient.ring({ nodes: [node] }));
  // Application servers run with warm connections: a cold connect would stagger the GETs.
  await Promise.all(clients.map((client) => client.router.sendToNode(node, ["PING"])));
  const helpers = clients.map(
    (client, i) =>
      new CacheAside<unknown>({
        client,
        random: seededRandom(`client-${i}`),
        ...(protection.lease ? {} : { lease: false as const }),
        coalesce: protection.coalesce,
        onEvent: (type) => {
          if (type === "miss" && ++misses === total) everyoneMissed();
        },
      }),
  );
  try {
    const values = await Promise.all(
      helpers.flatMap((helper) =>
        Array.from({ length: shape.callsEach }, () => helper.getOrLoad(key, () => db.load("event:42"))),
      ),
    );
    assert.equal(values.length, total);
    assert.equal(misses, total, "every request missed");
    for (const value of values) assert.deepEqual(value, { id: 42, title: "Opening night", seats: 1_800 });
    const sum = (field: "lease-wait-hit" | "lease-timeout") =>
      helpers.reduce((count, helper) => count + helper.stats[field], 0);
    return { loads: db.loads, waitHits: sum("lease-wait-hit"), leaseTimeouts: sum("lease-timeout") };
  } finally {
    await Promise.all(clients.map((client) => client.close()));
  }
}

describe("CA-20 / CA-21 stampede on one hot key", () => {
  let node: TestNode;
  before(async () => {
    node = await startCacheNode();
  });
  after(() => node.close());

  test("CA-20 1,000 concurrent misses (10 clients x 100 calls, each client its own connections, in one test process): 1 database load with lease + coalescing, ~1,000 without", async (t) => {
    const protectedRun = await stampede(node.port, "stampede:a", { lease: true, coalesce: true });
    const bare = await stampede(node.port, "stampede:b", { lease: false, coalesce: false });
    const coalesceOnly = await stampede(node.port, "stampede:c", { lease: false, coalesce: true });
    const leaseOnly = await stampede(node.port, "stampede:d", { lease: true, coalesce: false });
    t.diagnostic(
      [
        "1,000 concurrent misses on one key (10 clients x 100 calls):",
        "| protection              | database loads |",
        "|-------------------------|---------------:|",
        `| none                    | ${String(bare.loads).padStart(14)} |`,
        `| coalescing only         | ${String(coalesceOnly.loads).padStart(14)} |`,
        `| lease only              | ${String(leaseOnly.loads).padStart(14)} |`,
        `| lease + coalescing      | ${String(protectedRun.loads).padStart(14)} |`,
      ].join("\n"),
    );
    assert.equal(protectedRun.loads, 1, "one load for the whole stampede");
    assert.equal(protectedRun.leaseTimeouts, 0);
    assert.equal(protectedRun.waitHits, 9, "the 9 other clients found the value by polling");
    assert.equal(bare.loads, 1_000, "every miss went to the database");
    assert.equal(coalesceOnly.loads, 10, "coalescing alone: one load per client");
    assert.equal(leaseOnly.loads, 1, "the lease alone: one load across clients");
  });

  test("CA-21 the lease winner re-reads after acquiring: a value filled meanwhile is a hit, not a load", async () => {
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    let loads = 0;
    const helper = new CacheAside<string>({
      client,
      earlyRefreshBeta: 0,
      leaseDeps: { token: () => "our-token" },
      onEvent: (type) => {
        // Another process fills the key right between our miss and our lease.
        if (type === "miss") void client.set("reread", JSON.stringify("filled-by-other"), { exS: 60 });
      },
    });
    try {
      assert.equal(await helper.getOrLoad("reread", async () => `loaded-${++loads}`), "filled-by-other");
      assert.equal(helper.stats["hit-after-lock"], 1);
      assert.equal(loads, 0);
      assert.equal(await client.get("lock:reread"), null, "the lease was released");
    } finally {
      await client.del("reread");
      await client.close();
    }
  });

  test("CA-21 release deletes only our own token; a lease about to expire is left to expire", async () => {
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    const clock = new ManualClock();
    let next = 0;
    const lease = new StampedeLease(
      client,
      { leaseMs: 5_000, releaseMarginMs: 1_000 },
      {
        token: () => `token-${++next}`,
        monotonicMs: () => clock.monotonicMs(),
      },
    );
    try {
      const held = await lease.tryAcquire("release");
      assert.ok(held);
      assert.equal(await lease.tryAcquire("release"), undefined, "NX: a second acquire loses");
      // The lease expired and someone else took it: our release must not delete theirs.
      await client.set("lock:release", "someone-else", { pxMs: 5_000 });
      assert.equal(await lease.release(held), "not-ours");
      assert.equal(await client.get("lock:release"), "someone-else");
      await client.del("lock:release");
      const mine = await lease.tryAcquire("release");
      assert.ok(mine);
      clock.advance(4_500); // held longer than leaseMs - margin: GET-then-DEL could race a successor
      assert.equal(await lease.release(mine), "left-to-expire");
      assert.equal(await client.get("lock:release"), mine.token);
      await client.del("lock:release");
      const again = await lease.tryAcquire("release");
      assert.ok(again);
      assert.equal(await lease.release(again), "released");
      assert.equal(await client.get("lock:release"), null);
      assert.ok((await client.pttl((await lease.tryAcquire("ttl"))!.lockKey)) <= 5_000, "the lease has a PX");
    } finally {
      await client.del("lock:ttl");
      await client.close();
    }
  });

  test("CA-21 a loser polls 20 x 25 ms; if the value never comes it loads the value itself", async () => {
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    const waits: number[] = [];
    const helper = new CacheAside<string>({
      client,
      leaseDeps: { delay: async (ms) => void waits.push(ms) }, // no real waiting: count the polls
    });
    try {
      await client.set("lock:abandoned", "crashed-holder", { pxMs: 5_000 }); // a holder that died
      assert.equal(await helper.getOrLoad("abandoned", async () => "self-loaded"), "self-loaded");
      assert.deepEqual(waits, new Array(20).fill(25));
      assert.equal(helper.stats["lease-timeout"], 1);
      assert.equal(helper.stats.load, 1);
    } finally {
      await client.del("lock:abandoned", "abandoned");
      await client.close();
    }
  });

  test("CA-20 stale-while-revalidate: past freshness 100 readers get the stale value at once and one refresh runs", async () => {
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    const clock = new ManualClock(1_700_000_000_000);
    let version = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const options: CacheAsideOptions<string> = {
      client,
      clock,
      ttlS: 60,
      jitter: 0,
      earlyRefreshBeta: 0,
      staleWhileRevalidateS: 30,
    };
    const helper = new CacheAside<string>(options);
    const loader = async () => {
      version += 1;
      if (version > 1) await gate; // the refresh is slow: readers must not wait for it
      return `v${version}`;
    };
    try {
      assert.equal(await helper.getOrLoad("swr", loader), "v1");
      const ttlMs = await client.pttl("swr");
      assert.ok(ttlMs > 85_000 && ttlMs <= 90_000, `store TTL = fresh 60 s + stale 30 s, got ${ttlMs}`);
      clock.advance(61_000); // past freshness, inside the stale window
      const readers = await Promise.all(Array.from({ length: 100 }, () => helper.getOrLoad("swr", loader)));
      assert.ok(
        readers.every((value) => value === "v1"),
        "everyone got the stale value without waiting",
      );
      assert.equal(helper.stats.stale, 100);
      release();
      await helper.whenIdle();
      assert.equal(version, 2, "exactly one refresh ran");
      assert.equal(await helper.getOrLoad("swr", loader), "v2");
    } finally {
      await client.del("swr");
      await client.close();
    }
  });
});
