/**
 * RL-03: read, refill, decide and write must be ONE server-side step. The counter-example
 * lives here, in the test, on purpose: a naive token bucket that GETs the state, decides in
 * the client and SETs it back. Between its GET and its SET another instance can read the
 * same tokens, so two instances both pass on one token. The real limiter (the
 * token-bucket-n.lua script through createRateLimiter) is raced the same way on the same
 * real Redis, from several instances each with its own connection, and holds exactly.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { runClosedLoop } from "@casebook/lab/load-generator";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Redis } from "ioredis";
import { createRateLimiter, type RateLimiter } from "../src/create-rate-limiter.ts";
import { descriptor } from "../src/domain/descriptors.ts";
import { parsePolicyConfig } from "../src/domain/policy.ts";
import { deleteKeys } from "./store-backends.ts";

/** Connections (naive) and limiter instances (atomic) racing on one key. */
const INSTANCES = 6;
/** Capacity of the raced bucket; refill negligible during the test (1 token per 1 000 s). */
const CAPACITY = 5;
const RATE_PER_S = 0.001;
const CALLS = 60;
const CALLS_AT_ONCE = 30;

interface NaiveState {
  tokens: number;
  tsMs: number;
}

/**
 * THE COUNTER-EXAMPLE — do not copy. A token bucket in three round trips' worth of steps:
 * GET the state, refill and decide in the client (with the client's clock, RL-05's other
 * flaw), SET the result. Nothing stops another client between the GET and the SET.
 */
class NaiveTokenBucket {
  readonly #redis: Redis;

  constructor(redis: Redis) {
    this.#redis = redis;
  }

  /** Takes one token; `betweenReadAndWrite` lets a test hold the window open, as a GC pause or a slow network would. */
  async take(key: string, betweenReadAndWrite?: () => Promise<void>): Promise<boolean> {
    const raw = await this.#redis.get(key);
    const nowMs = Date.now();
    const state: NaiveState = raw ? (JSON.parse(raw) as NaiveState) : { tokens: CAPACITY, tsMs: nowMs };
    const tokens = Math.min(CAPACITY, state.tokens + (Math.max(0, nowMs - state.tsMs) * RATE_PER_S) / 1_000);
    await betweenReadAndWrite?.();
    if (tokens < 1) return false;
    await this.#redis.set(key, JSON.stringify({ tokens: tokens - 1, tsMs: nowMs }), "PX", 60_000);
    return true;
  }
}

/** Resolves once `parties` callers have arrived: every naive instance has read before any writes. */
function barrier(parties: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const open = new Promise<void>((resolve) => {
    release = resolve;
  });
  return () => {
    arrived++;
    if (arrived === parties) release();
    return open;
  };
}

const policies = parsePolicyConfig({
  domain: "race",
  policies: [
    {
      name: "raced",
      key: "user:{user}",
      limit: { algorithm: "token-bucket", capacity: CAPACITY, ratePerS: RATE_PER_S },
      // Closed: a store failure shows as "unavailable" instead of a local admit that would blur the count.
      failMode: "closed",
    },
  ],
});

describe("RL-03 atomicity on real Redis: naive GET-then-SET versus the Lua script", () => {
  const keyPrefix = `${uniqueName("rl-race")}:`;
  let url: string | undefined;
  const clients: Redis[] = [];
  const limiters: RateLimiter[] = [];

  /** INSTANCES naive buckets, each on its own connection. */
  async function naiveInstances(redisUrl: string): Promise<NaiveTokenBucket[]> {
    const opened = Array.from(
      { length: INSTANCES },
      () =>
        new Redis(redisUrl, { keyPrefix, lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 2_000 }),
    );
    clients.push(...opened);
    await Promise.all(opened.map((c) => c.connect()));
    return opened.map((c) => new NaiveTokenBucket(c));
  }

  /** INSTANCES real limiters, as INSTANCES service replicas would hold them: one connection each. */
  async function atomicInstances(redisUrl: string): Promise<RateLimiter[]> {
    const opened = await Promise.all(
      Array.from({ length: INSTANCES }, () =>
        // A generous timeout: on a loaded machine the race must be decided by Redis, not by a timeout.
        createRateLimiter({ policies, redisUrl, keyPrefix, timeoutMs: 2_000 }),
      ),
    );
    limiters.push(...opened);
    return opened;
  }

  after(async () => {
    for (const c of clients) c.disconnect();
    await Promise.all(limiters.map((l) => l.close()));
    if (url) await deleteKeys(url, keyPrefix);
  });

  test("RL-03 two naive instances interleaved GET, GET, SET, SET both pass on the last token", async (t) => {
    url = await requireRedis(t);
    if (!url) return;
    const [a, b] = await naiveInstances(url);
    const key = uniqueName("last-token");
    // Spend the bucket down to its last token, one call at a time (no race yet).
    for (let i = 0; i < CAPACITY - 1; i++) assert.equal(await a!.take(key), true);
    const bothRead = barrier(2);
    const passed = await Promise.all([a!.take(key, bothRead), b!.take(key, bothRead)]);
    assert.deepEqual(passed, [true, true], "one token, two admissions: the race");
    // A lost update: both SETs wrote "last token spent", so CAPACITY + 1 admissions left the
    // state of CAPACITY: the bucket now refuses as if nothing had gone wrong.
    assert.equal(await a!.take(key), false);
  });

  test("RL-03 the atomic limiter: two instances racing on the last token admit exactly one", async (t) => {
    url = await requireRedis(t);
    if (!url) return;
    const [a, b] = await atomicInstances(url);
    const d = descriptor({ user: uniqueName("last-token") });
    for (let i = 0; i < CAPACITY - 1; i++) {
      assert.equal((await a!.limiter.check({ descriptor: d, requestId: `warm-${i}` })).outcome, "allowed");
    }
    // Fired in the same tick from two connections: the script has no window to interleave into.
    const results = await Promise.all([
      a!.limiter.check({ descriptor: d, requestId: "a" }),
      b!.limiter.check({ descriptor: d, requestId: "b" }),
    ]);
    assert.deepEqual(results.map((r) => r.outcome).sort(), ["allowed", "limited"]);
    assert.ok(results.every((r) => !r.degraded));
  });

  test(`RL-03 ${CALLS} calls, ${CALLS_AT_ONCE} at a time, over ${INSTANCES} connections: naive admits more than ${CAPACITY}, atomic exactly ${CAPACITY}`, async (t) => {
    url = await requireRedis(t);
    if (!url) return;
    const naive = await naiveInstances(url);
    const naiveKey = uniqueName("naive");
    let naiveAllowed = 0;
    // No barrier here: the ordinary scheduling of parallel requests is enough to open the window.
    const naiveReport = await runClosedLoop({
      count: CALLS,
      concurrency: CALLS_AT_ONCE,
      requestTimeoutMs: 5_000,
      task: async ({ index }) => {
        if (await naive[index % INSTANCES]!.take(naiveKey)) naiveAllowed++;
      },
    });
    assert.equal(naiveReport.errors, 0);

    const atomic = await atomicInstances(url);
    const d = descriptor({ user: uniqueName("atomic") });
    const outcomes: string[] = [];
    const atomicReport = await runClosedLoop({
      count: CALLS,
      concurrency: CALLS_AT_ONCE,
      requestTimeoutMs: 5_000,
      task: async ({ index }) => {
        const result = await atomic[index % INSTANCES]!.limiter.check({
          descriptor: d,
          requestId: `r${index}`,
        });
        outcomes.push(result.degraded ? "degraded" : result.outcome);
      },
    });
    assert.equal(atomicReport.errors, 0);
    t.diagnostic(
      `naive admitted ${naiveAllowed} of ${CALLS}; atomic ${outcomes.filter((o) => o === "allowed").length}`,
    );

    assert.ok(naiveAllowed > CAPACITY, `the naive limiter admitted ${naiveAllowed}, capacity ${CAPACITY}`);
    assert.equal(outcomes.filter((o) => o === "allowed").length, CAPACITY);
    assert.equal(outcomes.filter((o) => o === "limited").length, CALLS - CAPACITY);
  });
});
