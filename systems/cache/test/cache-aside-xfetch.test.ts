/**
 * CA-20, probabilistic early expiration (XFetch: refresh when now − δ·β·ln(rand()) ≥ expiry).
 * The decision's probability, measured with a seeded random source against the closed
 * form exp(−gap / (δ·β)) at several distances from expiry and for two values of β; and
 * cache-aside on a cache node with a manual clock: δ is measured from the load and stored
 * beside the value, readers long before expiry never refresh, readers near it trigger one
 * background refresh before expiry, and nobody ever sees a miss.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import { decodeEnvelope } from "../src/domain/cache-envelope.ts";
import { earlyRefreshProbability, shouldRefreshEarly } from "../src/domain/xfetch.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

const DRAWS = 20_000;

describe("CA-20 XFetch early refresh", () => {
  test("CA-20 refreshes start before expiry with the probability exp(-gap/(δ·β)) the formula gives", (t) => {
    const random = seededRandom("xfetch");
    const deltaMs = 200;
    const expiresAtMs = 1_000_000;
    const rows: string[] = ["| β | gap before expiry | measured | exp(-gap/(δβ)) |", "|---|---|---:|---:|"];
    for (const beta of [1, 2]) {
      for (const gapMs of [0, 100, 200, 400, 800, 2_000]) {
        let refreshes = 0;
        for (let i = 0; i < DRAWS; i++) {
          if (shouldRefreshEarly({ nowMs: expiresAtMs - gapMs, expiresAtMs, deltaMs, beta, random }))
            refreshes += 1;
        }
        const measured = refreshes / DRAWS;
        const expected = earlyRefreshProbability(gapMs, deltaMs, beta);
        rows.push(`| ${beta} | ${gapMs / deltaMs}·δ | ${measured.toFixed(4)} | ${expected.toFixed(4)} |`);
        // 20,000 draws: the binomial standard deviation is at most 0.0035; allow 4 of them.
        assert.ok(
          Math.abs(measured - expected) < 0.014,
          `β=${beta} gap=${gapMs}: ${measured} vs ${expected}`,
        );
      }
    }
    t.diagnostic(`δ = ${deltaMs} ms, ${DRAWS} readers per row:\n${rows.join("\n")}`);
    assert.equal(earlyRefreshProbability(100, 200, 1), Math.exp(-0.5));
    assert.ok(
      earlyRefreshProbability(200, 200, 2) > earlyRefreshProbability(200, 200, 1),
      "a larger β refreshes earlier",
    );
  });

  test("at or past expiry always; never early with β = 0 or δ = 0", () => {
    const random = seededRandom(1);
    const base = { expiresAtMs: 1_000, deltaMs: 50, random };
    assert.equal(shouldRefreshEarly({ ...base, nowMs: 1_000, beta: 1 }), true);
    assert.equal(shouldRefreshEarly({ ...base, nowMs: 5_000, beta: 0 }), true);
    for (let i = 0; i < 1_000; i++) {
      assert.equal(shouldRefreshEarly({ ...base, nowMs: 999, beta: 0 }), false);
      assert.equal(shouldRefreshEarly({ ...base, nowMs: 999, deltaMs: 0, beta: 1 }), false);
    }
    // A random source returning exactly 0 must not turn ln(0) = -Infinity into a certain refresh.
    assert.equal(shouldRefreshEarly({ ...base, nowMs: 0, beta: 1, random: { next: () => 0 } }), false);
  });

  describe("through cache-aside on a cache node", () => {
    let node: TestNode;
    before(async () => {
      node = await startCacheNode();
    });
    after(() => node.close());

    test("CA-20 δ travels with the value; one reader refreshes shortly before expiry, nobody misses", async (t) => {
      const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
      const clock = new ManualClock(1_700_000_000_000);
      let decidedAtMs: number | undefined;
      const aside = new CacheAside<string>({
        client,
        clock,
        random: seededRandom("xfetch-readers"),
        ttlS: 60,
        jitter: 0,
        earlyRefreshBeta: 1,
        onEvent: (type) => {
          if (type === "early-refresh") decidedAtMs ??= clock.nowMs();
        },
      });
      let loads = 0;
      const loader = async () => {
        loads += 1;
        clock.advance(500); // the recomputation takes 500 ms: δ
        return `page-v${loads}`;
      };
      try {
        assert.equal(await aside.getOrLoad("xf", loader), "page-v1");
        const stored = decodeEnvelope((await client.get("xf"))!);
        assert.equal(stored.deltaMs, 500);
        const expiresAtMs = stored.freshUntilMs!;
        assert.equal(expiresAtMs, clock.nowMs() + 60_000);
        // Far from expiry (gap 50 s = 100 δ: p = e^-100) a thousand reads refresh nothing.
        for (let i = 0; i < 1_000; i++) assert.equal(await aside.getOrLoad("xf", loader), "page-v1");
        assert.equal(aside.stats["early-refresh"], 0);
        // Readers arrive every 10 ms from 5 s before expiry; the first that draws "refresh" starts it.
        clock.advance(expiresAtMs - 5_000 - clock.nowMs());
        let reads = 0;
        while (loads === 1 && clock.nowMs() < expiresAtMs) {
          assert.equal(await aside.getOrLoad("xf", loader), "page-v1", "readers keep the still-valid value");
          reads += 1;
          clock.advance(10);
          await aside.whenIdle();
        }
        const refreshedAtGapMs = expiresAtMs - decidedAtMs!;
        t.diagnostic(
          `refresh started ${refreshedAtGapMs} ms (${(refreshedAtGapMs / 500).toFixed(1)}·δ) before expiry, after ${reads} reads`,
        );
        assert.equal(loads, 2, "exactly one early refresh");
        assert.ok(refreshedAtGapMs > 0, "it happened before expiry");
        assert.equal(aside.stats.miss, 1, "only the very first read missed");
        assert.equal(await aside.getOrLoad("xf", loader), "page-v2");
        assert.ok(decodeEnvelope((await client.get("xf"))!).freshUntilMs! > expiresAtMs, "a new deadline");
      } finally {
        await client.del("xf");
        await client.close();
      }
    });
  });
});
