/** FD-14's merge and FD-15's cursor, as pure code. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodeCursor, encodeCursor } from "../src/domain/feed-cursor.ts";
import { mergeIds } from "../src/domain/feed-merge.ts";

test("FD-14 the union of the list and the celebrities' ids is deduplicated and sorted newest first by Snowflake id", () => {
  const list = [90n, 70n, 50n, 30n];
  const celebrityA = [80n, 50n];
  const celebrityB = [95n, 10n];
  assert.deepEqual(mergeIds([list, celebrityA, celebrityB]), [95n, 90n, 80n, 70n, 50n, 30n, 10n]);
  assert.deepEqual(mergeIds([list, celebrityA], { before: 70n }), [50n, 30n]);
  assert.deepEqual(mergeIds([list, celebrityB], { since: 70n }), [95n, 90n]);
});

test("FD-15 a cursor by id neither repeats nor skips when posts arrive between pages; OFFSET repeats", () => {
  let feed = [50n, 40n, 30n, 20n, 10n];
  const page1 = mergeIds([feed]).slice(0, 2); // [50, 40]
  feed = [70n, 60n, ...feed]; // two new posts before page 2
  const byCursor = mergeIds([feed], { before: page1.at(-1)! }).slice(0, 2);
  assert.deepEqual(byCursor, [30n, 20n]);
  const byOffset = feed.slice(2, 4); // OFFSET 2 LIMIT 2 over the grown feed
  assert.deepEqual(byOffset, [50n, 40n], "OFFSET hands page 1 back again");
});

test("FD-15 cursors round-trip; anything this API did not make is FEED_CURSOR_INVALID naming the field", () => {
  assert.deepEqual(decodeCursor(encodeCursor({ before: 123n }), "cursor"), { before: 123n });
  assert.deepEqual(decodeCursor(encodeCursor({ since: 9n }), "cursor"), { since: 9n });
  for (const bad of [
    "",
    "zzz",
    Buffer.from("b:0").toString("base64url"),
    Buffer.from("b:99999999999999999999").toString("base64url"),
    "YjoxMjM=",
  ]) {
    assert.throws(
      () => decodeCursor(bad, "cursor"),
      (e: { code?: string; fields?: { field?: string } }) =>
        e.code === "FEED_CURSOR_INVALID" && e.fields?.field === "cursor",
      bad,
    );
  }
});
