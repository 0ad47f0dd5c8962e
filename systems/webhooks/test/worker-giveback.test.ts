/**
 * The delivery worker gives back what a database failure strands (WH-11, WH-14), made
 * deterministic: PGlite, a ManualClock that never moves unless told (so a lease never runs
 * out by itself), a real local receiver, and a link to the database that fails the
 * statements a test names, as pg-database surfaces a lost server (SQL_UNAVAILABLE): before
 * the statement ran, or after it landed with its answer lost.
 *
 * Each stranding test heals the link at the SAME instant and runs one more round: without
 * the give-back the stranded deliveries are still leased (10 s) and that round claims
 * nothing; with it they are due again at once, and go. The two "untouched" tests show the
 * give-back is a lease-version CAS: a claim another worker took over, or a record that did
 * land, is left alone — nothing is sent or recorded twice because of it.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { Database, QueryResult } from "@casebook/infra/sql/sql";
import { sqlErrors } from "@casebook/infra/sql/sql-errors";
import { engineFree } from "@casebook/lab/test-engines";
import { createReceiverTenant, newTestSecret } from "../bench/backlog.ts";
import { startWebhookReceiver, type WebhookReceiver } from "../bench/webhook-receiver.ts";
import type { HttpSender } from "../src/clients/http-sender.ts";
import { claimDueForTenant } from "../src/store/delivery-claims.ts";
import { StrandedClaims } from "../src/workers/stranded-claims.ts";
import { openPgliteTestDatabase } from "./store-backends.ts";
import { ingest, newWorld, relayAll, type World } from "./store-fixture.ts";
import { statesOf, TEST_DEADLINE_MS, TEST_LEASE_MS, testSender, testWorker } from "./worker-fixture.ts";

/** The worker's statements, as the store writes them. */
const RECORD_ATTEMPTS = /INSERT INTO attempts/;
const SEND_CHECK = /json_agg\(json_build_object\('version'/;
const DEFER = /AS i\(lease_id, lease_version, lease_owner, until_at\)/;
const CLAIM = /UPDATE "deliveries" t\s+SET lease_owner/;

/** What the link does to the statements matching each pattern. */
interface Faults {
  /** Fails before the statement reaches the database. */
  failBefore?: RegExp;
  /** Runs the statement (it lands), then fails: its answer was lost. */
  loseAnswer?: RegExp;
}

function unavailable(detail: string): Error {
  return sqlErrors.create("SQL_UNAVAILABLE", { detail });
}

/** `inner` with `query` going through `faults`; everything else is the inner database's. */
function flakyLink(inner: Database, faults: Faults): Database {
  const query = async <Row>(text: string, params?: readonly unknown[]): Promise<QueryResult<Row>> => {
    if (faults.failBefore?.test(text)) throw unavailable("the test failed the statement");
    const result = await inner.query<Row>(text, params);
    if (faults.loseAnswer?.test(text)) throw unavailable("the test lost the statement's answer");
    return result;
  };
  return new Proxy(inner, {
    get(target, property) {
      if (property === "query") return query;
      const value: unknown = Reflect.get(target, property);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

let sender: HttpSender;
const receivers: WebhookReceiver[] = [];
const databases: Database[] = [];

before(() => {
  sender = testSender();
});

after(async () => {
  sender.close();
  for (const r of receivers) await r.close();
  for (const db of databases) await db.close();
});

interface Scene {
  db: Database;
  w: World;
  rx: WebhookReceiver;
  tenantId: string;
  faults: Faults;
  link: Database;
}

/** A fresh database, a receiver, a tenant subscribed to it, and `events` events fanned out. */
async function scene(events: number): Promise<Scene> {
  const db = await openPgliteTestDatabase();
  databases.push(db);
  const w = newWorld(db);
  const secret = newTestSecret();
  const rx = await startWebhookReceiver({ secrets: [secret] });
  receivers.push(rx);
  const { tenantId } = await createReceiverTenant(db, {
    name: "giveback",
    url: rx.url("/hooks"),
    secret,
    nowMs: w.clock.nowMs(),
  });
  for (let i = 0; i < events; i++) await ingest(w, tenantId, { payload: { i } });
  await relayAll(w);
  const faults: Faults = {};
  return { db, w, rx, tenantId, faults, link: flakyLink(db, faults) };
}

async function attemptRows(db: Database): Promise<number> {
  const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM attempts");
  return Number(rows[0]!.n);
}

/** Requests per webhook-id at the receiver, all of them verified. */
function requestsById(rx: WebhookReceiver): Map<string, number> {
  assert.equal(rx.unverified, 0, "every request verifies");
  const counts = new Map<string, number>();
  for (const r of rx.received) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
  return counts;
}

test("WH-14 sends whose results could not be recorded (database down) go again, same webhook-id, as soon as the database answers — not after the lease — and are recorded once", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(3);
  const worker = testWorker(s.link, s.w.clock, sender);
  s.faults.failBefore = RECORD_ATTEMPTS;
  assert.equal((await worker.runOnce()).claimed, 3);
  assert.equal(s.rx.requests, 3, "sent before the record failed");
  assert.deepEqual(await statesOf(s.db), { in_flight: 3 }, "stranded: still leased to the worker");
  assert.equal(await attemptRows(s.db), 0);

  s.faults.failBefore = undefined; // the database answers again, at the same instant: the lease still runs
  const round = await worker.runOnce();
  assert.equal(round.claimed, 3, `given back and claimed at once, not after the ${TEST_LEASE_MS} ms lease`);
  assert.deepEqual(await statesOf(s.db), { succeeded: 3 });
  assert.equal(await attemptRows(s.db), 3, "one attempt recorded per delivery: no double record");
  const counts = requestsById(s.rx);
  assert.equal(counts.size, 3);
  for (const [id, n] of counts)
    assert.equal(n, 2, `${id}: sent twice under the same webhook-id (at least once)`);
});

test("WH-11 a re-check the database failed: nothing sent; given back and sent once as soon as the database answers", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(2);
  const worker = testWorker(s.link, s.w.clock, sender);
  s.faults.failBefore = SEND_CHECK;
  assert.equal((await worker.runOnce()).claimed, 2);
  assert.equal(s.rx.requests, 0, "no check, no send");
  assert.deepEqual(await statesOf(s.db), { in_flight: 2 });

  s.faults.failBefore = undefined;
  assert.equal((await worker.runOnce()).claimed, 2, "due again at once");
  assert.deepEqual(await statesOf(s.db), { succeeded: 2 });
  for (const [id, n] of requestsById(s.rx)) assert.equal(n, 1, `${id} sent once`);
  assert.equal(await attemptRows(s.db), 2);
});

test("WH-20 a deferral the database failed is given back at the deferral's own time, not held for the lease, nor made due at once", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(1);
  // A retry the budget turns down: no first attempts and no floor leave it no room.
  await s.db.query("UPDATE deliveries SET attempts = 1 WHERE tenant_id = $1", [s.tenantId]);
  const worker = testWorker(s.link, s.w.clock, sender, {
    retryBudget: { retryFraction: 0.2, minRetriesPerS: 0 },
  });
  s.faults.failBefore = DEFER;
  assert.equal((await worker.runOnce()).claimed, 1);
  assert.deepEqual(await statesOf(s.db), { in_flight: 1 }, "the deferral failed: still leased");

  s.faults.failBefore = undefined;
  const nowMs = s.w.clock.nowMs();
  assert.equal((await worker.runOnce()).claimed, 0, "deferred, so not due now");
  const { rows } = await s.db.query<{ state: string; lease_owner: string | null; next_attempt_at: Date }>(
    "SELECT state, lease_owner, next_attempt_at FROM deliveries WHERE tenant_id = $1",
    [s.tenantId],
  );
  assert.equal(rows[0]!.state, "pending");
  assert.equal(rows[0]!.lease_owner, null, "the lease is given back");
  assert.ok(rows[0]!.next_attempt_at.getTime() > nowMs, "due at the budget's time, as the deferral meant");
  assert.equal(s.rx.requests, 0);
});

test("WH-11 claims whose claim statement's answer was lost are given back as soon as the database answers", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(2);
  const worker = testWorker(s.link, s.w.clock, sender);
  s.faults.loseAnswer = CLAIM;
  await assert.rejects(worker.runOnce(), (error: unknown) => sqlErrors.is(error, "SQL_UNAVAILABLE"));
  assert.deepEqual(await statesOf(s.db), { in_flight: 2 }, "leased to the worker, which never saw them");

  s.faults.loseAnswer = undefined;
  assert.equal((await worker.runOnce()).claimed, 2, "released by owner, claimed again at once");
  assert.deepEqual(await statesOf(s.db), { succeeded: 2 });
  for (const [id, n] of requestsById(s.rx)) assert.equal(n, 1, `${id} sent once`);
});

test("WH-10 a stranded claim another worker took over meanwhile is left alone by the give-back", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(1);
  const worker = testWorker(s.link, s.w.clock, sender);
  s.faults.failBefore = RECORD_ATTEMPTS;
  await worker.runOnce();
  assert.equal(s.rx.requests, 1);
  s.w.clock.advance(TEST_LEASE_MS + 1); // the lease ran out while the database was away
  const [taken] = await claimDueForTenant(s.db, s.tenantId, {
    workerId: "w-other",
    nowMs: s.w.clock.nowMs(),
    leaseMs: TEST_LEASE_MS,
    httpDeadlineMs: TEST_DEADLINE_MS,
    limit: 10,
  });
  assert.ok(taken, "another worker claimed it");

  s.faults.failBefore = undefined;
  assert.equal((await worker.runOnce()).claimed, 0);
  const { rows } = await s.db.query<{ state: string; lease_owner: string; lease_version: bigint }>(
    "SELECT state, lease_owner, lease_version FROM deliveries WHERE tenant_id = $1",
    [s.tenantId],
  );
  assert.deepEqual(rows, [{ state: "in_flight", lease_owner: "w-other", lease_version: taken.leaseVersion }]);
  assert.equal(s.rx.requests, 1, "nothing sent again by the first worker");
});

test("WH-14 a record that landed though its answer was lost is not given back: sent once, recorded once", async (t) => {
  if (engineFree(t)) return;
  const s = await scene(2);
  const worker = testWorker(s.link, s.w.clock, sender);
  s.faults.loseAnswer = RECORD_ATTEMPTS;
  assert.equal((await worker.runOnce()).claimed, 2);
  s.faults.loseAnswer = undefined;
  assert.equal((await worker.runOnce()).claimed, 0, "the give-back's CAS lost: the record had landed");
  assert.deepEqual(await statesOf(s.db), { succeeded: 2 });
  assert.equal(await attemptRows(s.db), 2);
  assert.equal(s.rx.requests, 2, "no second send");
});

test("stranded claims are bounded: past the worker's window a claim is not remembered (its lease will expire)", async (t) => {
  if (engineFree(t)) return;
  const db = await openPgliteTestDatabase();
  databases.push(db);
  const stranded = new StrandedClaims(db, { workerId: "w", max: 2 });
  const lease = (id: string) => ({ deliveryId: id, leaseVersion: 1n, workerId: "w", leaseExpiresAtMs: 0 });
  assert.equal(stranded.remember(lease("a")), true);
  assert.equal(stranded.remember(lease("b")), true);
  assert.equal(stranded.remember(lease("a")), true, "the same claim again takes no more room");
  assert.equal(stranded.remember(lease("c")), false);
  assert.equal(stranded.size, 2);
  assert.deepEqual(await stranded.giveBack(0, () => []), {
    givenBack: 0,
    expired: 0,
    untouched: 2,
    orphans: 0,
  });
  assert.equal(stranded.owed, false);
});
