/**
 * The leased claim queue on both engines (PGlite in memory, PostgreSQL in a fresh schema):
 * claims are disjoint; a row never has two live owners; renew extends only a live lease of
 * the same version; a superseded owner's late write loses; release makes a row due at once;
 * an expired lease is claimable again and bumps the version; releaseOrphaned gives back
 * exactly the owner's claims not kept; reclaimOwn takes back the owner's stranded leases;
 * bounds are refused with clear errors. Time is passed in (a manual clock): no test sleeps.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { contractSuite } from "@casebook/lab/contract-suite";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { engineFree } from "@casebook/lab/test-engines";
import { leaseOwnerId } from "../../src/sql/lease-owner.ts";
import { type Lease, LeaseQueue, type LeaseQueueOptions, MAX_LEASE_MS } from "../../src/sql/lease-queue.ts";
import type { Database } from "../../src/sql/sql.ts";
import { sqlErrors } from "../../src/sql/sql-errors.ts";

const T0 = Date.UTC(2026, 0, 1);
const LEASE_MS = 30_000;
let tables = 0;

interface Job {
  id: string;
  state: string;
  result: string | null;
  lease_owner: string | null;
  lease_version: bigint;
}

/** A fresh table of `n` jobs due at T0 (`j00`, `j01`, …), and a queue over it. */
async function jobs(db: Database, n: number, options: Partial<LeaseQueueOptions> = {}) {
  tables += 1;
  const table = `jobs_${tables}`;
  await db.exec(`CREATE TABLE ${table} (
    id text PRIMARY KEY, state text NOT NULL DEFAULT 'pending', result text,
    next_attempt_at timestamptz NOT NULL, lease_owner text, lease_expires_at timestamptz,
    lease_version int8 NOT NULL DEFAULT 0,
    CHECK ((lease_owner IS NULL) = (lease_expires_at IS NULL)))`);
  if (n > 0)
    await db.query(
      `INSERT INTO ${table} (id, next_attempt_at) SELECT 'j' || lpad(g::text, 2, '0'), $2 FROM generate_series(0, $1 - 1) AS g`,
      [n, new Date(T0)],
    );
  const queue = new LeaseQueue<Job, string>({
    table,
    idType: "text",
    claimable: "t.state <> 'done'",
    order: "t.next_attempt_at, t.id",
    minLeaseMs: 1_000,
    ...options,
  });
  const row = async (id: string) =>
    (
      await db.query<Job & { next_attempt_at: Date; lease_expires_at: Date | null }>(
        `SELECT * FROM ${table} WHERE id = $1`,
        [id],
      )
    ).rows[0]!;
  return { queue, table, row };
}

const claimOf = (owner: string, nowMs: number, limit = 100, leaseMs = LEASE_MS) => ({
  owner,
  nowMs,
  leaseMs,
  limit,
});

const backends = sqlBackends({
  system: "lease-queue",
  prefix: "lease_queue",
  prepare: async () => {},
  subject: (db) => db,
});

contractSuite("lease queue", backends, (it) => {
  it("claimers racing take disjoint rows, each claim bumping lease_version", async (db) => {
    const { queue } = await jobs(db, 30);
    const claims = await Promise.all(["a", "b", "c"].map((o) => queue.claim(db, claimOf(o, T0, 12))));
    const ids = claims.flat().map((c) => c.lease.id);
    assert.equal(ids.length, 30);
    assert.equal(new Set(ids).size, 30, "no row claimed twice");
    for (const [i, owner] of ["a", "b", "c"].entries())
      for (const c of claims[i]!) {
        assert.deepEqual(
          [c.lease.owner, c.lease.leaseVersion, c.lease.leaseExpiresAtMs, c.previousOwner],
          [owner, 1n, T0 + LEASE_MS, null],
        );
        assert.equal(c.row.lease_owner, owner, "the RETURNed row is the claimed one");
        assert.equal(c.row.id, c.lease.id);
      }
  });

  it("a row never has two live owners: nothing is claimable until the lease ends", async (db) => {
    const { queue } = await jobs(db, 5);
    assert.equal((await queue.claim(db, claimOf("a", T0))).length, 5);
    assert.equal((await queue.claim(db, claimOf("b", T0))).length, 0);
    assert.equal((await queue.claim(db, claimOf("b", T0 + LEASE_MS - 1))).length, 0, "1 ms before the end");
    assert.equal((await queue.claim(db, claimOf("a", T0 + 1))).length, 0, "not even by its owner");
  });

  it("an expired lease is claimable again, from its previous owner, under a bumped version", async (db) => {
    const { queue } = await jobs(db, 3);
    const first = await queue.claim(db, claimOf("a", T0));
    const second = await queue.claim(db, claimOf("b", T0 + LEASE_MS));
    assert.deepEqual(
      second.map((c) => [c.lease.id, c.lease.leaseVersion, c.previousOwner]),
      first.map((c) => [c.lease.id, 2n, "a"]),
    );
  });

  it("only due rows that the caller's predicate admits are claimed, in the caller's order", async (db) => {
    const { queue, table } = await jobs(db, 4);
    await db.query(`UPDATE ${table} SET next_attempt_at = $1 WHERE id = 'j00'`, [new Date(T0 + 5_000)]);
    await db.query(`UPDATE ${table} SET state = 'done' WHERE id = 'j01'`);
    const claimed = await queue.claim(db, claimOf("a", T0));
    assert.deepEqual(
      claimed.map((c) => c.lease.id),
      ["j02", "j03"],
    );
    const later = await queue.claim(db, {
      ...claimOf("a", T0 + 5_000),
      where: (p) => `t.id = ${p.add("j00")}`,
    });
    assert.deepEqual(
      later.map((c) => c.lease.id),
      ["j00"],
      "a per-call filter, with its own parameter",
    );
  });

  it("renew extends only a live lease of the same version, without bumping it", async (db) => {
    const { queue, row } = await jobs(db, 2);
    const [a, b] = await queue.claim(db, claimOf("a", T0));
    const renewed = await queue.renew(db, a!.lease, { nowMs: T0 + 20_000, leaseMs: LEASE_MS });
    assert.deepEqual(renewed, { ...a!.lease, leaseExpiresAtMs: T0 + 20_000 + LEASE_MS });
    const r = await row(a!.lease.id);
    assert.equal(r.lease_version, 1n);
    assert.equal(r.lease_expires_at!.getTime(), T0 + 50_000);
    assert.deepEqual(
      (await queue.claim(db, claimOf("b", T0 + LEASE_MS))).map((c) => c.lease.id),
      [b!.lease.id],
      "the renewed row stays with its owner past the first lease end",
    );
    const stale = { ...a!.lease, leaseVersion: 0n };
    assert.equal(await queue.renew(db, stale, { nowMs: T0 + 21_000, leaseMs: LEASE_MS }), undefined);
    assert.equal(
      await queue.renew(db, { ...a!.lease, owner: "b" }, { nowMs: T0 + 21_000, leaseMs: LEASE_MS }),
      undefined,
      "another owner cannot renew it",
    );
    assert.equal(
      await queue.renew(db, renewed!, { nowMs: T0 + 50_000, leaseMs: LEASE_MS }),
      undefined,
      "an expired lease is not renewed, even before anyone claimed it",
    );
  });

  it("a late write by a superseded owner loses; the current owner's wins and ends the claim", async (db) => {
    const { queue, row } = await jobs(db, 1);
    const [old] = await queue.claim(db, claimOf("a", T0));
    const [current] = await queue.claim(db, claimOf("b", T0 + LEASE_MS));
    const done = (who: string) => ({ nowMs: T0 + LEASE_MS + 1, set: `state = 'done', result = '${who}'` });
    assert.deepEqual(await queue.update(db, old!.lease, done("a")), { won: false });
    const write = await queue.update(db, current!.lease, done("b"));
    assert.ok(write.won);
    assert.deepEqual(
      [write.row.result, write.row.state, write.row.lease_owner, write.row.lease_version],
      ["b", "done", null, 3n],
    );
    const r = await row("j00");
    assert.equal(r.lease_expires_at, null);
    assert.deepEqual(await queue.update(db, current!.lease, done("b")), { won: false }, "a write wins once");
  });

  it("update can keep or renew the lease, and the write bumps the version each time", async (db) => {
    const { queue, row } = await jobs(db, 1);
    const [c] = await queue.claim(db, claimOf("a", T0));
    const kept = await queue.update(db, c!.lease, {
      nowMs: T0 + 1,
      set: (p) => `result = ${p.add("step 1")}`,
      lease: "keep",
    });
    assert.ok(kept.won);
    assert.deepEqual([kept.row.lease_owner, kept.row.lease_version], ["a", 2n]);
    assert.deepEqual(
      await queue.update(db, c!.lease, { nowMs: T0 + 2, set: "result = 'stale'", lease: "keep" }),
      { won: false },
      "the old version is fenced out by the owner's own write",
    );
    const next: Lease<string> = { ...c!.lease, leaseVersion: 2n };
    const renewed = await queue.update(db, next, {
      nowMs: T0 + 3,
      set: "result = 'step 2'",
      lease: { renewUntilMs: T0 + 60_000 },
    });
    assert.ok(renewed.won);
    assert.equal((await row("j00")).lease_expires_at!.getTime(), T0 + 60_000);
  });

  it("release makes a row due at once, unowned, under a new version; a stale release loses", async (db) => {
    const { queue, row } = await jobs(db, 1);
    const [c] = await queue.claim(db, claimOf("a", T0));
    assert.equal(await queue.release(db, c!.lease, T0 + 10), true);
    const r = await row("j00");
    assert.deepEqual(
      [r.lease_owner, r.lease_expires_at, r.lease_version, r.next_attempt_at.getTime()],
      [null, null, 2n, T0 + 10],
    );
    assert.equal(await queue.release(db, c!.lease, T0 + 11), false);
    const [again] = await queue.claim(db, claimOf("b", T0 + 10));
    assert.deepEqual([again!.lease.leaseVersion, again!.previousOwner], [3n, null]);
  });

  it("releaseOrphaned gives back exactly the owner's claims not in keep, and no one else's", async (db) => {
    const { queue, table } = await jobs(db, 8);
    const mine = await queue.claim(db, claimOf("a", T0, 5));
    const theirs = await queue.claim(db, claimOf("b", T0, 3));
    const keep = mine.slice(0, 2).map((c) => c.lease.id);
    assert.equal(await queue.releaseOrphaned(db, { owner: "a", keep, nowMs: T0 + 5 }), 3);
    const { rows } = await db.query<{ id: string; lease_owner: string | null }>(
      `SELECT id, lease_owner FROM ${table} ORDER BY id`,
    );
    const owners = new Map(rows.map((r) => [r.id, r.lease_owner]));
    for (const id of keep) assert.equal(owners.get(id), "a");
    for (const c of mine.slice(2)) assert.equal(owners.get(c.lease.id), null);
    for (const c of theirs) assert.equal(owners.get(c.lease.id), "b");
    const back = await queue.claim(db, claimOf("c", T0 + 5));
    assert.deepEqual(
      back.map((c) => c.lease.id).sort(),
      mine
        .slice(2)
        .map((c) => c.lease.id)
        .sort(),
      "given back: due at once",
    );
    assert.ok(back.every((c) => c.lease.leaseVersion === 3n));
    assert.equal(await queue.releaseOrphaned(db, { owner: "a", keep, nowMs: T0 + 6 }), 0);
  });

  it("reclaimOwn takes back the owner's own leases granted up to an instant, except those it drives", async (db) => {
    const { queue } = await jobs(db, 4);
    const first = await queue.claim(db, claimOf("a", T0, 3));
    const later = await queue.claim(db, claimOf("a", T0 + 1_000, 1));
    assert.equal(later.length, 1);
    const driving = first[0]!.lease.id;
    const taken = await queue.claim(db, {
      ...claimOf("a", T0 + 2_000),
      reclaimOwn: { exceptIds: [driving], leasedUpToMs: T0 + 500 },
    });
    assert.deepEqual(
      taken.map((c) => [c.lease.id, c.lease.leaseVersion, c.previousOwner]).sort(),
      first
        .slice(1)
        .map((c) => [c.lease.id, 2n, "a"])
        .sort(),
      "not the one it drives, not the one leased after the instant",
    );
    assert.equal(
      (
        await queue.claim(db, {
          ...claimOf("b", T0 + 2_000),
          reclaimOwn: { exceptIds: [], leasedUpToMs: T0 + 5_000 },
        })
      ).length,
      0,
      "another owner's live leases are never reclaimed",
    );
  });

  it("claimById: a row held by a live lease is refused, unless the owner asks for its own", async (db) => {
    const { queue, table } = await jobs(db, 2);
    await db.query(`UPDATE ${table} SET next_attempt_at = $1 WHERE id = 'j01'`, [new Date(T0 + 60_000)]);
    const notDue = await queue.claimById(db, "j01", { owner: "a", nowMs: T0, leaseMs: LEASE_MS });
    assert.equal(notDue?.lease.leaseVersion, 1n, "claimed by id whether due or not");
    const [c] = await queue.claim(db, claimOf("a", T0));
    assert.equal(
      await queue.claimById(db, "j00", { owner: "b", nowMs: T0 + 1, leaseMs: LEASE_MS }),
      undefined,
    );
    assert.equal(
      await queue.claimById(db, "j00", { owner: "a", nowMs: T0 + 1, leaseMs: LEASE_MS }),
      undefined,
    );
    const own = await queue.claimById(db, "j00", {
      owner: "a",
      nowMs: T0 + 1,
      leaseMs: LEASE_MS,
      orOwn: true,
    });
    assert.deepEqual([own?.lease.leaseVersion, own?.previousOwner], [2n, "a"]);
    assert.deepEqual(await queue.update(db, c!.lease, { nowMs: T0 + 2, set: "result = 'x'" }), {
      won: false,
    });
    const waited = await queue.claimById(db, "j00", {
      owner: "b",
      nowMs: T0 + 1 + LEASE_MS,
      leaseMs: LEASE_MS,
      locked: "wait",
    });
    assert.deepEqual([waited?.lease.leaseVersion, waited?.previousOwner], [3n, "a"]);
    await db.query(`UPDATE ${table} SET state = 'done' WHERE id = 'j01'`);
    assert.equal(
      await queue.claimById(db, "j01", { owner: "a", nowMs: T0 + LEASE_MS * 3, leaseMs: LEASE_MS }),
      undefined,
      "the caller's predicate applies by id too",
    );
  });

  it("updateMany: one fenced write per lease in input order, per-row input as i.<column>", async (db) => {
    const { queue, row } = await jobs(db, 3);
    const [a, b, c] = await queue.claim(db, claimOf("a", T0));
    const stale = { ...c!.lease, leaseVersion: 0n };
    const writes = await queue.updateMany(db, [b!.lease, stale, a!.lease], {
      nowMs: T0 + 1,
      columns: [
        { name: "result", type: "text", values: ["B", "C", "A"] },
        {
          name: "due_at",
          type: "timestamptz",
          values: [new Date(T0 + 9), new Date(T0 + 9), new Date(T0 + 7)],
        },
      ],
      set: "result = i.result, next_attempt_at = i.due_at",
    });
    assert.deepEqual(
      writes.map((w) => (w.won ? w.row.result : null)),
      ["B", null, "A"],
    );
    const ra = await row(a!.lease.id);
    assert.deepEqual([ra.lease_owner, ra.lease_version, ra.next_attempt_at.getTime()], [null, 2n, T0 + 7]);
    assert.equal((await row(c!.lease.id)).lease_owner, "a", "the lost write touched nothing");
    await assert.rejects(
      queue.updateMany(db, [a!.lease, a!.lease], { nowMs: T0, set: "result = 'x'" }),
      RangeError,
    );
  });

  it("updateManyStatement composes: one row per lease still held, parameters after the caller's", async (db) => {
    const { queue, row } = await jobs(db, 2);
    const [a, b] = await queue.claim(db, claimOf("a", T0));
    const stale = { ...b!.lease, leaseVersion: 0n };
    const states = queue.updateManyStatement(
      [a!.lease, stale],
      {
        nowMs: T0 + 1,
        columns: [{ name: "result", type: "text", values: ["A", "B"] }],
        set: "result = i.result",
      },
      1,
    );
    const { rows } = await db.query<{ lease_claim_id: string; tag: string }>(
      `WITH states AS (${states.text}) SELECT lease_claim_id, $1::text AS tag FROM states`,
      ["mine", ...states.params],
    );
    assert.deepEqual(
      rows.map((r) => [r.lease_claim_id, r.tag]),
      [[a!.lease.id, "mine"]],
    );
    assert.equal((await row(a!.lease.id)).result, "A");
    assert.equal((await row(b!.lease.id)).lease_owner, "a", "the lost write touched nothing");
    assert.throws(() => queue.updateManyStatement([], { nowMs: T0, set: "result = 'x'" }, 0), RangeError);
  });

  it("updateMany with renewUntilMs: per lease, a time keeps and renews the claim, null ends it", async (db) => {
    const { queue, row } = await jobs(db, 3);
    const [a, b, c] = await queue.claim(db, claimOf("a", T0));
    const stale = { ...c!.lease, leaseVersion: 0n };
    const writes = await queue.updateMany(db, [a!.lease, b!.lease, stale], {
      nowMs: T0 + 1,
      set: "result = 'stepped'",
      renewUntilMs: [T0 + 50_000, null, T0 + 50_000],
    });
    assert.deepEqual(
      writes.map((w) => w.won),
      [true, true, false],
    );
    const kept = await row(a!.lease.id);
    assert.deepEqual(
      [kept.result, kept.lease_owner, kept.lease_expires_at?.getTime(), kept.lease_version],
      ["stepped", "a", T0 + 50_000, a!.lease.leaseVersion + 1n],
      "renewed, owner kept, version bumped (the next write fences on it)",
    );
    const ended = await row(b!.lease.id);
    assert.deepEqual([ended.result, ended.lease_owner, ended.lease_expires_at], ["stepped", null, null]);
    assert.equal((await row(c!.lease.id)).result, null, "the lost write touched nothing");
    const next = { ...a!.lease, leaseVersion: a!.lease.leaseVersion + 1n };
    assert.deepEqual(
      (await queue.updateMany(db, [next], { nowMs: T0 + 2, set: "result = 'done'" })).map((w) => w.won),
      [true],
      "the kept claim writes again under its new version",
    );
    await assert.rejects(
      queue.updateMany(db, [next], { nowMs: T0, set: "result = 'x'", renewUntilMs: [] }),
      /renewUntilMs: 0 values for 1 leases/,
    );
  });

  it("dueAtLeaseEnd + held: a held row is due at its lease end, fenced writes require the held state", async (db) => {
    const { queue, row } = await jobs(db, 1, {
      held: "t.state = 'in_flight'",
      dueAtLeaseEnd: true,
      onClaim: (p) => `state = 'in_flight', result = ${p.add("claimed")}`,
      onRelease: "state = 'pending'",
      onRenew: "result = 'renewed'",
    });
    const [c] = await queue.claim(db, claimOf("a", T0));
    let r = await row("j00");
    assert.deepEqual(
      [r.state, r.result, r.next_attempt_at.getTime()],
      ["in_flight", "claimed", T0 + LEASE_MS],
    );
    const renewed = await queue.renew(db, c!.lease, { nowMs: T0 + 10, leaseMs: LEASE_MS });
    r = await row("j00");
    assert.deepEqual([r.result, r.next_attempt_at.getTime()], ["renewed", T0 + 10 + LEASE_MS]);
    assert.equal(await queue.release(db, renewed!, T0 + 20), true);
    r = await row("j00");
    assert.deepEqual([r.state, r.next_attempt_at.getTime()], ["pending", T0 + 20]);
    const [again] = await queue.claim(db, claimOf("b", T0 + 20));
    await db.query(`UPDATE ${queue.table} SET state = 'cancelled' WHERE id = 'j00'`);
    assert.deepEqual(await queue.update(db, again!.lease, { nowMs: T0 + 21, set: "result = 'late'" }), {
      won: false,
    });
    assert.equal(await queue.releaseOrphaned(db, { owner: "b", keep: [], nowMs: T0 + 22 }), 0);
  });

  it("int8 ids: claims, fenced writes and releases by bigint id", async (db) => {
    tables += 1;
    const table = `jobs_${tables}`;
    await db.exec(`CREATE TABLE ${table} (id int8 GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      next_attempt_at timestamptz NOT NULL, lease_owner text, lease_expires_at timestamptz,
      lease_version int8 NOT NULL DEFAULT 0)`);
    await db.query(`INSERT INTO ${table} (next_attempt_at) SELECT $1 FROM generate_series(1, 3)`, [
      new Date(T0),
    ]);
    const queue = new LeaseQueue<{ id: bigint }, bigint>({
      table,
      idType: "int8",
      claimable: "TRUE",
      order: "t.id",
      minLeaseMs: 1,
    });
    const claimed = await queue.claim(db, claimOf("a", T0));
    assert.deepEqual(
      claimed.map((c) => c.lease.id),
      [1n, 2n, 3n],
    );
    const writes = await queue.updateMany(
      db,
      claimed.map((c) => c.lease),
      { nowMs: T0, set: "next_attempt_at = t.next_attempt_at" },
    );
    assert.ok(writes.every((w) => w.won));
    const again = await queue.claim(db, claimOf("a", T0));
    assert.equal(await queue.releaseOrphaned(db, { owner: "a", keep: [again[0]!.lease.id], nowMs: T0 }), 2);
    const [one] = await queue.claim(db, {
      ...claimOf("a", T0),
      reclaimOwn: { exceptIds: [], leasedUpToMs: T0 },
      limit: 1,
    });
    assert.equal(one?.lease.id, 1n);
    assert.equal(one?.previousOwner, "a");
  });

  it("bounds: limit, lease length and batch sizes are refused with clear errors; names are checked", async (db) => {
    const { queue } = await jobs(db, 1, { maxClaimLimit: 10 });
    await assert.rejects(queue.claim(db, claimOf("a", T0, 0)), /limit must be an integer in 1\.\.10/);
    await assert.rejects(queue.claim(db, claimOf("a", T0, 11)), /limit must be an integer in 1\.\.10/);
    await assert.rejects(queue.claim(db, claimOf("a", T0, 1, 999)), /leaseMs must be an integer in 1000\.\./);
    await assert.rejects(queue.claim(db, claimOf("a", T0, 1, MAX_LEASE_MS + 1)), RangeError);
    await assert.rejects(
      queue.claim(db, { ...claimOf("a", T0, 1, 5_000), minLeaseMs: 6_000 }),
      /leaseMs must be an integer in 6000\.\./,
      "a per-call floor (the work's deadline + headroom) raises the queue's",
    );
    await assert.rejects(queue.claim(db, claimOf("", T0)), /lease owner/);
    await assert.rejects(
      queue.renew(
        db,
        { id: "j00", leaseVersion: 1n, owner: "a", leaseExpiresAtMs: 0 },
        {
          nowMs: T0,
          leaseMs: 1,
        },
      ),
      RangeError,
    );
    const base = { idType: "text" as const, claimable: "TRUE", minLeaseMs: 1 };
    assert.throws(
      () => new LeaseQueue({ ...base, table: "jobs; DROP TABLE x" }),
      (err) => sqlErrors.is(err, "SQL_NAME_INVALID"),
    );
    assert.throws(
      () => new LeaseQueue({ ...base, table: "jobs", idColumn: 'id"' }),
      (err) => sqlErrors.is(err, "SQL_NAME_INVALID"),
    );
    assert.throws(() => new LeaseQueue({ ...base, table: "jobs", minLeaseMs: 0 }), RangeError);
    assert.throws(() => new LeaseQueue({ ...base, table: "jobs", maxClaimLimit: 10_001 }), RangeError);
    await assert.rejects(
      queue.updateMany(db, [{ id: "j00", leaseVersion: 1n, owner: "a", leaseExpiresAtMs: 0 }], {
        nowMs: T0,
        columns: [{ name: "x", type: "text); DROP TABLE y; --", values: ["v"] }],
        set: "result = i.x",
      }),
      RangeError,
    );
  });
});

test("lease owner id: host:pid:random[:role], fresh per call, role checked", (t) => {
  if (engineFree(t)) return;
  const id = leaseOwnerId();
  assert.match(id, new RegExp(`^[^:]+:${process.pid}:[0-9a-f]{8}$`));
  assert.notEqual(leaseOwnerId(), id, "a fresh random part per call");
  assert.equal(leaseOwnerId("refunds", { host: "h", pid: 7, random: "abcd0123" }), "h:7:abcd0123:refunds");
  assert.throws(() => leaseOwnerId("Bad Role"), RangeError);
});
