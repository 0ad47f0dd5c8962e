/**
 * CA-08 The records (struct-of-arrays, keys and values in the arena, open-addressing table)
 * behave like a Map: 50,000 random adds, removes, overwrites and expiry changes, checked
 * against a Map model after every step for the touched key and in full at the end — values of
 * every size class and beyond (own chunks), keys that share hash-table runs, swap-removes that
 * move records, and the per-slot lists and TTL bag kept exact. Then the arena reuses freed slots.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { keySlot } from "@casebook/kit/cluster-slot";
import { int, seededRandom } from "@casebook/kit/random";
import { NO_EXPIRY } from "../src/domain/cache-entry.ts";
import { KeyRecords } from "../src/domain/key-records.ts";
import { SlotIndex } from "../src/domain/slot-index.ts";
import { SIZE_CLASSES, slotBytes, ValueArena } from "../src/domain/value-arena.ts";

const STEPS = 50_000;
const KEYS = 3_000;
const LENGTHS = [0, 1, 15, 16, 17, 100, 1_000, 16_384, 20_000, 70_000];

describe("key records", () => {
  test("CA-08 random adds, removes, overwrites and expiries agree with a Map model", () => {
    const random = seededRandom(7);
    const records = new KeyRecords(12_345);
    const model = new Map<string, { value: string; expiresAtMs: number; access: number }>();
    const randomValue = (step: number) => {
      const length = LENGTHS[int(random, LENGTHS.length)]!;
      return String.fromCharCode(32 + (step % 200)).repeat(length);
    };
    for (let step = 0; step < STEPS; step++) {
      const key = `k:${int(random, KEYS)}`;
      const id = records.idOf(key);
      const known = model.get(key);
      assert.equal(id >= 0, known !== undefined, `step ${step}: ${key} present`);
      const op = int(random, 4);
      if (id < 0) {
        const value = randomValue(step);
        records.add(key, value, step);
        model.set(key, { value, expiresAtMs: NO_EXPIRY, access: step });
      } else if (op === 0) {
        records.remove(id);
        model.delete(key);
      } else if (op === 1) {
        const value = randomValue(step);
        records.setValue(id, value);
        known!.value = value;
      } else {
        const expiresAtMs = op === 2 ? 1_000 + step : NO_EXPIRY;
        records.setExpiresAt(id, expiresAtMs);
        known!.expiresAtMs = expiresAtMs;
      }
      const now = records.idOf(key);
      if (model.has(key)) {
        assert.equal(records.value(now), model.get(key)!.value, `step ${step}: ${key}'s value`);
      } else assert.equal(now, -1);
    }
    assert.equal(records.size, model.size);
    let withTtl = 0;
    for (const [key, known] of model) {
      const id = records.idOf(key);
      assert.equal(records.keyOf(id), key);
      assert.equal(records.value(id), known.value);
      assert.equal(records.expiresAtOf(id), known.expiresAtMs);
      assert.equal(records.accessOf(id), known.access);
      if (known.expiresAtMs !== NO_EXPIRY) withTtl += 1;
    }
    assert.equal(records.count("ttl"), withTtl);
    const index = new SlotIndex(records);
    const all = [...index.all()];
    assert.deepEqual(all.sort(), [...model.keys()].sort(), "every key once in the slot lists");
    for (const key of model.keys()) assert.ok(index.keys(keySlot(key), 10_000).includes(key));
  });

  test("CA-08 the arena reuses a freed slot of the same class and frees a large value's chunk", () => {
    const arena = new ValueArena();
    const a = arena.store("x".repeat(100));
    const reserved = arena.reservedBytes;
    arena.free(a, 100);
    const b = arena.store("y".repeat(112));
    assert.equal(b, a, "same class (112): same slot");
    assert.equal(arena.read(b, 112), "y".repeat(112));
    assert.equal(arena.reservedBytes, reserved);
    const big = arena.store("z".repeat(100_000));
    assert.equal(arena.reservedBytes, reserved + slotBytes(100_000));
    arena.free(big, 100_000);
    assert.equal(arena.reservedBytes, reserved);
    assert.equal(slotBytes(100), 112);
    assert.equal(SIZE_CLASSES.at(-1), 16_384);
  });
});
