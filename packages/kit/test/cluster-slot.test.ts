import assert from "node:assert/strict";
import { test } from "node:test";
import { hashTag, keySlot, sameSlot } from "../src/cluster-slot.ts";

test("slots match Redis Cluster's published values", () => {
  // CLUSTER KEYSLOT answers from the Redis documentation and the CRC16/XMODEM check value.
  assert.equal(keySlot("foo"), 12182);
  assert.equal(keySlot("somekey"), 11058);
  assert.equal(keySlot("hello"), 866);
  assert.equal(keySlot("123456789"), 0x31c3 % 16384);
});

test("only the first non-empty {tag} is hashed", () => {
  assert.equal(hashTag("{user1000}.following"), "user1000");
  assert.equal(hashTag("foo{}{bar}"), "foo{}{bar}");
  assert.equal(hashTag("foo{{bar}}zap"), "{bar");
  assert.equal(hashTag("foo{bar}{zap}"), "bar");
  assert.equal(hashTag("no-tag"), "no-tag");
  assert.equal(keySlot("{user1000}.following"), keySlot("{user1000}.followers"));
});

test("sameSlot is true for one tag, false for unrelated keys", () => {
  assert.ok(sameSlot([]));
  assert.ok(sameSlot(["rl:{t42}:tokens", "rl:{t42}:stamp"]));
  assert.ok(!sameSlot(["foo", "hello"]));
});
