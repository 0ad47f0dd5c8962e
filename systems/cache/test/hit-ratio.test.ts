/**
 * CA-24: eviction policies compared by hit ratio at the same capacity, on the same
 * traces: Zipf(0.99), Zipf polluted by one-time scans (20% of requests), and a loop larger
 * than the cache. Scaled down from the bench (5,000 keys, 50,000 requests) so it runs in
 * a second or two; `bench/hit-ratio.ts` prints the full-size table. What must hold: W-TinyLFU ≥ LRU
 * on every trace and size, and Bélády's optimum ≥ every policy.
 */
import assert from "node:assert/strict";
import { before, describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import {
  type HitRatioCell,
  hitRatio,
  hitRatioTable,
  type PolicyName,
  policyLabels,
  policyNames,
} from "../src/domain/hit-ratio-sim.ts";
import { loopTrace } from "../src/domain/loop-trace.ts";
import { scanPollutedTrace } from "../src/domain/scan-trace.ts";
import { zipfTrace } from "../src/domain/zipf-trace.ts";

const KEYS = 5_000;
const REQUESTS = 50_000;
const LOOP = KEYS / 5;
const SIZES = [0.01, 0.05, 0.1];

const traces = [
  {
    name: "zipf",
    trace: zipfTrace({ keys: KEYS, requests: REQUESTS, random: seededRandom("ca-24 zipf") }),
    keys: KEYS,
  },
  {
    name: "scan",
    trace: scanPollutedTrace({
      keys: KEYS,
      requests: REQUESTS,
      scanLength: KEYS / 5,
      random: seededRandom("ca-24 scan"),
    }),
    keys: KEYS,
  },
  // As in the bench: a loop over a fifth of the key space, 2x to 20x the cache.
  { name: "loop", trace: loopTrace({ length: LOOP, requests: REQUESTS }), keys: KEYS },
];

function render(cells: readonly HitRatioCell[]): string {
  const header = `| trace | size | ${policyNames.map((p) => policyLabels[p]).join(" | ")} |`;
  const rows: string[] = [];
  for (const { name } of traces) {
    for (const size of SIZES) {
      const row = policyNames.map((policy) => {
        const cell = cells.find((c) => c.trace === name && c.sizeFraction === size && c.policy === policy)!;
        return (cell.hitRatio * 100).toFixed(2);
      });
      rows.push(`| ${name} | ${size * 100}% | ${row.join(" | ")} |`);
    }
  }
  return [header, ...rows].join("\n");
}

describe("CA-24 eviction policies by hit ratio at the same capacity", () => {
  let cells: HitRatioCell[] = [];
  before(() => {
    cells = hitRatioTable({ traces, sizeFractions: SIZES, seed: "ca-24" });
  });
  const at = (trace: string, size: number, policy: PolicyName) =>
    cells.find((c) => c.trace === trace && c.sizeFraction === size && c.policy === policy)!.hitRatio;

  test("CA-24 W-TinyLFU >= LRU on Zipf, scan-polluted and loop traces at 1%, 5%, 10%", (t) => {
    t.diagnostic(`hit ratio %, ${KEYS} keys, ${REQUESTS} requests:\n${render(cells)}`);
    for (const { name } of traces) {
      for (const size of SIZES) {
        const tiny = at(name, size, "w-tiny-lfu");
        const lru = at(name, size, "lru");
        assert.ok(tiny >= lru, `${name} ${size * 100}%: W-TinyLFU ${tiny} < LRU ${lru}`);
      }
    }
    // Not only >=: on skewed traffic the frequency sketch buys several points.
    assert.ok(at("zipf", 0.01, "w-tiny-lfu") - at("zipf", 0.01, "lru") > 0.03);
    assert.ok(at("scan", 0.01, "w-tiny-lfu") - at("scan", 0.01, "lru") > 0.03);
  });

  test("CA-24 Bélády's optimum >= every policy on every trace and size", () => {
    for (const cell of cells) {
      const optimum = at(cell.trace, cell.sizeFraction, "belady");
      assert.ok(
        optimum >= cell.hitRatio,
        `${cell.trace} ${cell.sizeFraction}: ${cell.policy} ${cell.hitRatio} > ${optimum}`,
      );
    }
  });

  test("CA-24 the loop is LRU's worst case: 0 hits, while the optimum keeps a fixed subset", () => {
    for (const size of SIZES) {
      assert.equal(at("loop", size, "lru"), 0);
      // Bélády on a loop of L keys with C slots hits (C - 1) / (L - 1) of the requests after the first lap.
      const expected = ((size * KEYS - 1) / (LOOP - 1)) * (1 - LOOP / REQUESTS);
      assert.ok(
        Math.abs(at("loop", size, "belady") - expected) < 0.002,
        `belady ${at("loop", size, "belady")}`,
      );
    }
    // W-TinyLFU keeps a fixed subset too while its sketch remembers a lap (loop <= 10x the cache).
    assert.ok(at("loop", 0.1, "w-tiny-lfu") > 0.8 * at("loop", 0.1, "belady"));
  });

  test("CA-24 the table is reproducible: the same seed gives the same hit ratios", () => {
    const again = hitRatio("sampled-lfu", traces[0]!.trace, KEYS / 100, { seed: "ca-24" });
    assert.equal(again, at("zipf", 0.01, "sampled-lfu"));
  });
});
