/**
 * CA-08 / CA-13 The accounting constant is honest: the V8 heap one entry really costs,
 * measured with forced garbage collections over 200 000 entries, stays within 25% of
 * `key + value + ENTRY_OVERHEAD_BYTES`. Were it far below, maxmemory would let the process
 * outgrow the RAM planned for it; far above, it would waste the memory it protects.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { ENTRY_OVERHEAD_BYTES, NO_EXPIRY } from "../src/domain/cache-entry.ts";
import { Keyspace } from "../src/domain/keyspace.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const ENTRIES = 200_000;
const VALUE_BYTES = 100;

/** Heap bytes per entry beyond key and value, for entries with or without a TTL. */
function measuredOverhead(withTtl: boolean): number {
  gc();
  gc();
  const before = process.memoryUsage().heapUsed;
  const keyspace = new Keyspace({ clock: systemClock, random: seededRandom(1) });
  const expiry = withTtl ? systemClock.nowMs() + 3_600_000 : NO_EXPIRY;
  let payload = 0;
  for (let i = 0; i < ENTRIES; i++) {
    // Flat strings decoded from bytes, as the RESP parser makes them (a template or repeat() makes ropes).
    const key = Buffer.from(`user:${String(i).padStart(9, "0")}`).toString("latin1");
    const value = Buffer.alloc(VALUE_BYTES, 97 + (i % 26)).toString("latin1");
    keyspace.set(key, value, expiry);
    payload += key.length + value.length;
  }
  gc();
  gc();
  const after = process.memoryUsage().heapUsed;
  assert.equal(keyspace.size, ENTRIES); // keeps the keyspace alive through the measurement
  return (after - before - payload) / ENTRIES;
}

describe("entry overhead", () => {
  for (const withTtl of [false, true]) {
    test(`CA-08 the accounted overhead matches the heap within 25% (${withTtl ? "with" : "without"} TTL)`, () => {
      const overhead = measuredOverhead(withTtl);
      const ratio = overhead / ENTRY_OVERHEAD_BYTES;
      assert.ok(
        ratio > 0.75 && ratio < 1.25,
        `measured ${overhead.toFixed(0)} B per entry vs accounted ${ENTRY_OVERHEAD_BYTES} B`,
      );
    });
  }
});
