/**
 * The click record and the bounded buffer as pure code (US-15): user-agent families and bots,
 * a visitor hash that counts one visitor within a day but cannot follow them across days and
 * never holds the address; a full buffer drops and counts instead of growing or waiting.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ClickBuffer } from "../src/domain/click-buffer.ts";
import {
  ClickEncoder,
  toClickColumns,
  toClickRecord,
  uaFamilyOf,
  visitorHash,
} from "../src/domain/click-record.ts";
import { recordVisit, type Visit } from "../src/domain/visit.ts";
import { textArrayLiteral, toClickBatch } from "../src/store/click-batch.ts";
import { WorkerClickEncoder } from "../src/workers/click-encoder.ts";

const KEY = new Uint8Array(32).fill(9);
const T = Date.UTC(2026, 0, 1, 12);

function visit(overrides: Partial<Visit> = {}): Visit {
  return {
    atMs: T,
    domain: "s.example",
    code: "abc1234",
    status: 302,
    referrer: "https://news.example/a?b",
    userAgent: "Mozilla/5.0 Firefox/131.0",
    ip: "203.0.113.9",
    ...overrides,
  };
}

test("user-agent families, and bots told apart", () => {
  assert.equal(
    uaFamilyOf("Mozilla/5.0 (Windows NT 10.0) AppleWebKit/537.36 Chrome/130.0 Safari/537.36 Edg/130.0"),
    "edge",
  );
  assert.equal(uaFamilyOf("Mozilla/5.0 AppleWebKit/537.36 Chrome/130.0 Safari/537.36"), "chrome");
  assert.equal(
    uaFamilyOf("Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15"),
    "safari",
  );
  for (const bot of [
    "Googlebot/2.1",
    "curl/8.5.0",
    "facebookexternalhit/1.1",
    "HeadlessChrome/120",
    "python-requests/2.31",
  ]) {
    assert.equal(uaFamilyOf(bot), "bot", bot);
  }
  assert.equal(uaFamilyOf(undefined), "other");
});

test("the visitor hash: one visitor per day, unlinkable across days, no address stored", () => {
  const record = toClickRecord(visit(), KEY);
  assert.equal(record.referrerHost, "news.example");
  assert.equal(record.uaFamily, "firefox");
  assert.equal(record.bot, false);
  assert.equal(record.orphan, false);
  assert.ok(!JSON.stringify(record).includes("203.0.113.9"));
  assert.equal(
    visitorHash(KEY, T, "203.0.113.9", "ua"),
    visitorHash(KEY, T + 3_600_000, "203.0.113.9", "ua"),
  );
  assert.notEqual(
    visitorHash(KEY, T, "203.0.113.9", "ua"),
    visitorHash(KEY, T + 86_400_000, "203.0.113.9", "ua"),
  );
  assert.notEqual(visitorHash(KEY, T, "203.0.113.9", "ua"), visitorHash(KEY, T, "203.0.113.10", "ua"));
  assert.equal(toClickRecord(visit({ status: 404 }), KEY).orphan, true);
});

test("US-15 a full buffer drops visits and counts them; it never grows past its bound", () => {
  let dropped = 0;
  const buffer = new ClickBuffer({ maxEntries: 5, onDrop: (n) => (dropped += n) });
  for (let i = 0; i < 8; i++) recordVisit(buffer, visit({ code: `c${i}` }));
  assert.equal(buffer.size, 5);
  assert.equal(dropped, 3);
  assert.deepEqual(buffer.stats, { recorded: 5, dropped: 3, waiting: 5 });
  const batch = buffer.take(2);
  assert.deepEqual(
    batch.map((v) => v.code),
    ["c0", "c1"],
  );
  recordVisit(buffer, visit({ code: "late" }));
  recordVisit(buffer, visit({ code: "later" }));
  assert.equal(buffer.putBack(batch), 2, "a refused batch goes back only as far as there is room");
  assert.equal(buffer.size, 5);
  assert.deepEqual(
    buffer.take(5).map((v) => v.code),
    ["c2", "c3", "c4", "late", "later"],
    "what waited stays, oldest first; the refused batch found no room",
  );
});

test("US-15 a repeat of the newest visit within its second is folded into it: counted, never dropped, one row", () => {
  let dropped = 0;
  const buffer = new ClickBuffer({ maxEntries: 2, onDrop: (n) => (dropped += n) });
  recordVisit(buffer, visit({ code: "a" }));
  for (let i = 0; i < 3; i++) recordVisit(buffer, visit({ code: "b", atMs: T + i }));
  assert.deepEqual([buffer.entries, buffer.size], [2, 4], "two entries, four clicks");
  recordVisit(buffer, visit({ code: "c" }));
  assert.equal(dropped, 1, "a new visit finds the buffer full");
  recordVisit(buffer, visit({ code: "b", atMs: T + 999 }));
  assert.deepEqual([buffer.entries, buffer.size], [2, 5], "a repeat of the newest still counts when full");
  recordVisit(buffer, visit({ code: "b", atMs: T + 1_000 }));
  recordVisit(buffer, visit({ code: "b", ip: "203.0.113.10" }));
  recordVisit(buffer, visit({ code: "b", userAgent: "other" }));
  assert.equal(dropped, 4, "the next second, another address, another user-agent: new visits, dropped");
  assert.deepEqual(buffer.stats, { recorded: 5, dropped: 4, waiting: 5 });
  const batch = buffer.take(10);
  assert.deepEqual(
    batch.map((v) => [v.code, v.count, v.atMs]),
    [
      ["a", 1, T],
      ["b", 4, T],
    ],
    "a folded entry keeps its first click's time",
  );
  assert.equal(buffer.size, 0);
  recordVisit(buffer, visit({ code: "d" }));
  recordVisit(buffer, visit({ code: "d" }));
  assert.equal(buffer.putBack(batch), 4, "a refused batch: the entry that found no room loses its 4 clicks");
  assert.deepEqual(
    buffer.take(10).map((v) => [v.code, v.count]),
    [
      ["a", 1],
      ["d", 2],
    ],
  );
  assert.equal(
    toClickBatch(toClickColumns(batch, KEY)).params[9],
    "{1,4}",
    "the store gets one row of 4 clicks",
  );
});

test("long user-agents and referrers are cut, so a buffered visit has a bounded size", () => {
  const buffer = new ClickBuffer({ maxEntries: 1 });
  recordVisit(
    buffer,
    visit({ userAgent: "x".repeat(20_000), referrer: `https://r.example/${"y".repeat(20_000)}` }),
  );
  const [kept] = buffer.take(1);
  assert.equal(kept!.userAgent!.length, 256);
  assert.equal(kept!.referrer!.length, 512);
});

test("US-15 the ring keeps order across wrap-arounds and put-backs, never past its bound", () => {
  const buffer = new ClickBuffer({ maxEntries: 4 });
  const codes = (batch: readonly Visit[]) => batch.map((v) => v.code);
  let next = 0;
  const add = (n: number) => {
    for (let i = 0; i < n; i++) recordVisit(buffer, visit({ code: `v${next++}`, atMs: T + next }));
  };
  add(3);
  assert.deepEqual(codes(buffer.take(2)), ["v0", "v1"]);
  add(3); // wraps: slots 3, 0, 1
  assert.equal(buffer.size, 4);
  const refused = buffer.take(3);
  assert.deepEqual(codes(refused), ["v2", "v3", "v4"]);
  add(1);
  assert.equal(buffer.putBack(refused), 1, "room for the oldest two of the three");
  assert.deepEqual(codes(buffer.take(10)), ["v2", "v3", "v5", "v6"]);
  assert.equal(buffer.size, 0);
  add(2);
  const [first] = buffer.take(1);
  assert.equal(first!.atMs, T + 8);
  assert.deepEqual(buffer.stats, { recorded: 9, dropped: 1, waiting: 1 });
});

test("US-15 the encoder's worker thread gives the columns the in-thread encoding gives; one batch at a time", async (t) => {
  const encoder = new WorkerClickEncoder({ key: KEY, timeoutMs: 30_000 });
  t.after(() => encoder.close());
  const visits = [
    visit(),
    visit({ code: "", status: 200, referrer: undefined, userAgent: "Googlebot/2.1" }),
    visit({ atMs: T + 86_400_000, status: 404, ip: "2001:db8::1" }),
  ];
  const first = encoder.encode(visits);
  await assert.rejects(encoder.encode(visits), /one batch at a time/);
  const batch = await first;
  assert.deepEqual(batch, toClickBatch(toClickColumns(visits, KEY)));
  assert.equal(batch.count, 3);
  assert.equal(batch.rows, 3);
  assert.deepEqual(batch.daysMs, [Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 2)]);
  assert.equal(batch.params[6], "{f,t,f}", "bot");
  assert.equal(batch.params[8], "{f,t,t}", "orphan");
  assert.equal(batch.params[4], '{"news.example",NULL,"news.example"}', "referrer host");
  assert.equal((await encoder.encode([])).count, 0, "the next batch after an answer is taken");
});

test("US-15 clicks equal in every field within one second fold into one row; every click is still counted", () => {
  const visits = [
    visit(),
    visit({ atMs: T + 999 }), // same second: folded into the first
    visit({ atMs: T + 1_000 }), // the next second: a row of its own
    visit({ atMs: T + 5, ip: "203.0.113.10" }), // another visitor
    visit({ atMs: T + 6, userAgent: "Mozilla/5.0 Firefox/132.0" }), // same family, another visitor hash
    visit({ atMs: T + 7, referrer: "https://news.example/other" }), // same referrer host: folded
    visit({ atMs: T + 8, referrer: undefined }), // no referrer
    visit({ atMs: T + 9, code: "abc1235" }),
    visit({ atMs: T + 10, status: 404 }), // an orphan visit of the same code
    visit({ atMs: T + 11, domain: "t.example" }),
    visit({ atMs: T + 12, code: "5:news" }), // a code shaped like the fold's own fields
    visit({ atMs: T + 13 }),
  ];
  const columns = toClickColumns(visits, KEY);
  assert.deepEqual(columns.clicks, [4, 1, 1, 1, 1, 1, 1, 1, 1]);
  assert.equal(
    columns.clicks.reduce((a, b) => a + b, 0),
    visits.length,
  );
  assert.equal(columns.at[0], new Date(T).toISOString(), "a folded row keeps its first click's time");
  assert.deepEqual(columns.code, [
    "abc1234",
    "abc1234",
    "abc1234",
    "abc1234",
    "abc1234",
    "abc1235",
    "abc1234",
    "abc1234",
    "5:news",
  ]);
  assert.deepEqual(columns.orphan, [false, false, false, false, false, false, true, false, false]);
  const batch = toClickBatch(columns);
  assert.equal(batch.count, visits.length);
  assert.equal(batch.rows, 9);
  assert.equal(batch.params[9], "{4,1,1,1,1,1,1,1,1}");
});

test("the encoder's memos give what the plain functions give, also once they are full and start again", () => {
  const encoder = new ClickEncoder(KEY, 2);
  for (let i = 0; i < 50; i++) {
    const v = visit({
      atMs: T + i * 7_200_000,
      ip: `203.0.113.${i % 5}`,
      userAgent: i % 3 === 0 ? "Googlebot/2.1" : `Mozilla/5.0 Chrome/${i % 4}.0`,
      referrer: i % 4 === 0 ? undefined : `https://r${i % 6}.example/x`,
    });
    assert.deepEqual(encoder.record(v), toClickRecord(v, KEY), `visit ${i}`);
  }
});

test("a batch's array literals quote and escape every element", () => {
  assert.equal(textArrayLiteral([]), "{}");
  assert.equal(
    textArrayLiteral(['a"b', "c\\d", "{x,y}", null, "NULL"]),
    '{"a\\"b","c\\\\d","{x,y}",NULL,"NULL"}',
  );
});
