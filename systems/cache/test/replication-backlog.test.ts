/**
 * The primary's replication history (domain/replication-backlog.ts): offsets count
 * entries, a position inside the backlog resumes with just the missing entries, and the
 * byte bound drops the oldest ones.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ReplicationBacklog } from "../src/replication/domain/replication-backlog.ts";

const entry = (text: string) => Buffer.from(text, "latin1");

describe("replication backlog", () => {
  test("offsets count entries; since() returns what a replica at that offset misses", () => {
    const backlog = new ReplicationBacklog({ maxBytes: 1_024 });
    for (const text of ["a", "b", "c"]) backlog.append(entry(text));
    assert.equal(backlog.offset, 3);
    assert.deepEqual(backlog.since(1)!.map(String), ["b", "c"]);
    assert.deepEqual(backlog.since(3), []);
    assert.equal(backlog.since(4), undefined, "a replica ahead of the primary comes from another history");
  });

  test("the byte bound drops the oldest entries; a replica behind them needs a full sync", () => {
    const backlog = new ReplicationBacklog({ maxBytes: 10 });
    for (let i = 0; i < 6; i++) backlog.append(entry(`${i}1234`));
    assert.ok(backlog.bytes <= 10);
    assert.equal(backlog.firstOffset, 4);
    assert.equal(backlog.since(3), undefined);
    assert.deepEqual(backlog.since(4)!.map(String), ["41234", "51234"]);
  });

  test("reset starts a new history at the given offset (a promoted replica)", () => {
    const backlog = new ReplicationBacklog({ maxBytes: 100 });
    backlog.append(entry("x"));
    backlog.reset(42);
    assert.equal(backlog.offset, 42);
    assert.deepEqual(backlog.since(42), []);
    assert.equal(backlog.since(1), undefined);
  });

  test("stays bounded over many appends", () => {
    const backlog = new ReplicationBacklog({ maxBytes: 1_000 });
    for (let i = 0; i < 100_000; i++) backlog.append(entry("0123456789"));
    assert.equal(backlog.offset, 100_000);
    assert.equal(backlog.bytes, 1_000);
    assert.equal(backlog.since(100_000 - 100)!.length, 100);
  });
});
