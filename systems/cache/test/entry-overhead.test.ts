/**
 * CA-08 / CA-13 used_memory is tied to measured memory (issue 15): after 200,000 writes the
 * keyspace's accounted bytes (`usedBytes`, INFO's used_memory) stay within TOLERANCE of what the
 * process really grew by — V8 heap used plus external memory (ArrayBuffers, i.e. the value
 * arena; Node's `arrayBuffers` is a part of `external`), measured with forced garbage
 * collections — for values of 16 B, 100 B and 1 KB, with and without TTL. Were it far below,
 * maxmemory would let the process outgrow the RAM planned for it; far above, it would waste
 * the memory it protects.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { NO_EXPIRY } from "../src/domain/cache-entry.ts";
import { Keyspace } from "../src/domain/keyspace.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const ENTRIES = 200_000;
/** |accounted / measured − 1| allowed: typed arrays and the Map grow by doubling, so slack varies with the count. */
const TOLERANCE = 0.2;

function measured(): number {
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

/** Bytes the process grew by and bytes the keyspace accounts, after ENTRIES writes. */
function measure(valueBytes: number, withTtl: boolean): { grown: number; accounted: number } {
  const before = measured();
  const keyspace = new Keyspace({ clock: systemClock, random: seededRandom(1) });
  const expiry = withTtl ? systemClock.nowMs() + 3_600_000 : NO_EXPIRY;
  for (let i = 0; i < ENTRIES; i++) {
    // Flat strings decoded from bytes, as the RESP parser makes them (a template or repeat() makes ropes).
    const key = Buffer.from(`user:${String(i).padStart(9, "0")}`).toString("latin1");
    const value = Buffer.alloc(valueBytes, 97 + (i % 26)).toString("latin1");
    keyspace.set(key, value, expiry);
  }
  const grown = measured() - before;
  assert.equal(keyspace.size, ENTRIES); // keeps the keyspace alive through the measurement
  return { grown, accounted: keyspace.usedBytes };
}

describe("used_memory against measured memory", () => {
  for (const valueBytes of [16, 100, 1_024]) {
    for (const withTtl of [false, true]) {
      test(`CA-08 used_memory is within ${TOLERANCE * 100}% of V8 heap used + external (${valueBytes} B values, ${withTtl ? "with" : "without"} TTL)`, (t) => {
        const { grown, accounted } = measure(valueBytes, withTtl);
        const ratio = accounted / grown;
        t.diagnostic(
          `accounted ${(accounted / ENTRIES).toFixed(0)} B/key, measured ${(grown / ENTRIES).toFixed(0)} B/key`,
        );
        assert.ok(
          Math.abs(ratio - 1) <= TOLERANCE,
          `accounted ${(accounted / ENTRIES).toFixed(0)} B per key vs measured ${(grown / ENTRIES).toFixed(0)} B (ratio ${ratio.toFixed(2)})`,
        );
      });
    }
  }
});
