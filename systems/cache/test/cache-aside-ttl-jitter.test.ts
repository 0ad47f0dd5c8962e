/**
 * CA-12: TTL is the consistency tool, eviction the memory tool: cache-aside always sets a
 * TTL, and jitters TTLs written in bulk (300 s ± 10%) so they do not expire in the same
 * second. Shown on the pure function (10,000 draws) and on 1,000 keys bulk-written through
 * cache-aside to a cache node, read back with PTTL.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { CacheAside } from "../src/client/cache-aside.ts";
import { CacheClient } from "../src/client/cache-client.ts";
import { jitteredTtlS, ttlRangeS } from "../src/domain/ttl-jitter.ts";
import { policyErrors } from "../src/errors.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

function histogram(values: readonly number[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

describe("CA-12 TTL jitter", () => {
  test("CA-12 300 s ± 10% spreads 10,000 TTLs uniformly over the 61 seconds 270..330", (t) => {
    const random = seededRandom("ttl-jitter");
    const ttls = Array.from({ length: 10_000 }, () => jitteredTtlS(300, 0.1, random));
    const counts = histogram(ttls);
    assert.deepEqual(ttlRangeS(300, 0.1), { minS: 270, maxS: 330 });
    assert.equal(Math.min(...ttls), 270);
    assert.equal(Math.max(...ttls), 330);
    assert.equal(counts.size, 61, "every second of the range is used");
    const busiest = Math.max(...counts.values());
    t.diagnostic(
      `busiest second holds ${busiest} of 10,000 expiries (${(busiest / 100).toFixed(2)}%); without jitter: 100%`,
    );
    assert.ok(busiest < 250, `no second holds more than 2.5% (uniform: 1.64%), got ${busiest}`);
    const mean = ttls.reduce((a, b) => a + b, 0) / ttls.length;
    assert.ok(Math.abs(mean - 300) < 1, `centred on 300 s, mean ${mean}`);
    // Without jitter the whole bulk load expires in one second.
    assert.deepEqual(
      [...histogram(Array.from({ length: 100 }, () => jitteredTtlS(300, 0, random)))],
      [[300, 100]],
    );
  });

  test("out-of-range TTLs and jitter are refused with a named field", () => {
    for (const [ttlS, jitter] of [
      [0, 0.1],
      [300, 0.6],
      [300, -0.1],
      [1.5, 0],
    ] as const) {
      assert.throws(
        () => jitteredTtlS(ttlS, jitter, seededRandom(1)),
        (error) => policyErrors.is(error, "CACHE_POLICY_CONFIG_INVALID"),
      );
    }
    assert.deepEqual(
      ttlRangeS(5, 0.1),
      { minS: 5, maxS: 5 },
      "a 5 s TTL has no whole second of jitter to give",
    );
  });

  describe("through cache-aside on a cache node", () => {
    let node: TestNode;
    before(async () => {
      node = await startCacheNode();
    });
    after(() => node.close());

    test("CA-12 1,000 keys bulk-loaded through cache-aside all carry a TTL, spread over ~61 seconds", async (t) => {
      const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
      const aside = new CacheAside<number>({ client, ttlS: 300, jitter: 0.1, random: seededRandom("bulk") });
      try {
        const keys = Array.from({ length: 1_000 }, (_, i) => `bulk:${i}`);
        await Promise.all(keys.map((key, i) => aside.getOrLoad(key, async () => i)));
        const ttlsMs = await Promise.all(keys.map((key) => client.pttl(key)));
        assert.ok(
          ttlsMs.every((ms) => ms > 268_000 && ms <= 330_000),
          "every key has a TTL in 270..330 s",
        );
        const seconds = histogram(ttlsMs.map((ms) => Math.round(ms / 1_000)));
        const busiest = Math.max(...seconds.values());
        t.diagnostic(
          `1,000 keys expire over ${seconds.size} distinct seconds; busiest second: ${busiest} keys`,
        );
        assert.ok(seconds.size >= 55, `spread over ~61 seconds, got ${seconds.size}`);
        assert.ok(busiest <= 45, `no second takes more than 4.5% of the expiries, got ${busiest}`);
      } finally {
        await client.close();
      }
    });
  });
});
