/**
 * The study's traces are what the hit ratios mean, so they are checked too: the Zipf
 * sampler matches its distribution, a seed reproduces a trace, the scan trace holds
 * exactly 20% one-time sequential keys, and the loop cycles.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { loopTrace } from "../src/domain/loop-trace.ts";
import { scanPollutedTrace } from "../src/domain/scan-trace.ts";
import { ZipfSampler, zipfTrace } from "../src/domain/zipf-trace.ts";
import { policyErrors } from "../src/errors.ts";

describe("traces", () => {
  test("Zipf(0.99): the most popular key and the top 1% get their share of the requests", () => {
    const keys = 10_000;
    const trace = zipfTrace({ keys, requests: 200_000, random: seededRandom("zipf-shape") });
    const sampler = new ZipfSampler(keys, 0.99);
    let harmonic = 0;
    for (let rank = 1; rank <= keys; rank++) harmonic += rank ** -0.99;
    assert.ok(Math.abs(sampler.cumulative(0) - 1 / harmonic) < 1e-12, "P(key 0) = 1 / H(N, s)");
    const counts = new Int32Array(keys);
    for (const key of trace) counts[key]!++;
    const top1 = counts.slice(0, keys / 100).reduce((a, b) => a + b, 0) / trace.length;
    assert.ok(Math.abs(counts[0]! / trace.length - sampler.cumulative(0)) < 0.005, `key 0: ${counts[0]}`);
    assert.ok(Math.abs(top1 - sampler.cumulative(keys / 100 - 1)) < 0.005, `top 1%: ${top1}`);
    // Popularity falls with rank: each decade of ranks gets less than the one before.
    const decade = (from: number, to: number) =>
      counts.slice(from, to).reduce((a, b) => a + b, 0) / (to - from);
    assert.ok(decade(0, 10) > decade(10, 100) && decade(10, 100) > decade(100, 1_000));
  });

  test("a seed reproduces a trace; another seed gives another", () => {
    const make = (seed: string) => zipfTrace({ keys: 1_000, requests: 1_000, random: seededRandom(seed) });
    assert.deepEqual(make("a"), make("a"));
    assert.notDeepEqual(make("a"), make("b"));
  });

  test("the scan trace: 20% of requests are fresh keys in sequential runs, each requested once", () => {
    const keys = 10_000;
    const trace = scanPollutedTrace({
      keys,
      requests: 100_000,
      scanLength: 2_000,
      random: seededRandom("scan-shape"),
    });
    const scanKeys = trace.filter((key) => key >= keys);
    assert.equal(scanKeys.length, 20_000);
    assert.equal(new Set(scanKeys).size, scanKeys.length, "no scan key repeats");
    let runs = 0;
    for (let i = 0; i < trace.length; i++) {
      if (trace[i]! >= keys && (i === 0 || trace[i - 1]! < keys)) {
        runs++;
        for (let j = 1; j < 2_000; j++) assert.equal(trace[i + j], trace[i]! + j, "a scan is sequential");
      }
    }
    assert.equal(runs, 10);
  });

  test("the loop cycles through its keys in order", () => {
    assert.deepEqual([...loopTrace({ length: 3, requests: 7 })], [0, 1, 2, 0, 1, 2, 0]);
  });

  test("bad trace options are refused naming the field", () => {
    assert.throws(
      () => zipfTrace({ keys: 0, requests: 10, random: seededRandom(1) }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID") && e.fields.field === "keys",
    );
    assert.throws(
      () => scanPollutedTrace({ keys: 10, requests: 100, scanLength: 500, random: seededRandom(1) }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID") && e.fields.field === "scanLength",
    );
  });
});
