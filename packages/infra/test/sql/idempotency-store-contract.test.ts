/**
 * The idempotency store's contract, on PGlite (memory) and the real PostgreSQL. Every
 * case uses its own merchant ids, so cases share one table without meeting. Time is a
 * ManualClock: leases and the 24 h retention are crossed by moving it, never by sleeping.
 * The concurrent versions of PY-02 (processes, pools) live in idempotency-race.test.ts.
 */
import assert from "node:assert/strict";
import { ManualClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import {
  fingerprintRequest,
  RECOVERY_FINISHED,
  RECOVERY_STARTED,
  RESPONSE_BODY_MAX_BYTES,
  type StoredResponse,
  selectReplayHeaders,
  validateIdempotencyKey,
} from "@casebook/kit/idempotency";
import { contractSuite } from "@casebook/lab/contract-suite";
import {
  type IdempotencyLease,
  type IdempotencyRecord,
  type IdempotencyStore,
  RECORD_MAX_BATCH,
} from "../../src/sql/idempotency-store.ts";
import type { Queryable } from "../../src/sql/sql.ts";
import {
  type IdempotencyErrorCode,
  type IdempotencySubject,
  idempotencyBackends,
  idempotencyErrors,
  idempotencyStore,
  testIdempotency,
} from "./idempotency-backends.ts";

const T0 = Date.UTC(2026, 9, 22, 12, 0, 0);
const DAY_MS = 86_400_000;
const LEASE_MS = 60_000;
const PAY = fingerprintRequest({
  method: "POST",
  path: "/payments",
  body: { amount: "5000", currency: "BRL" },
});
const CREATED: StoredResponse = {
  status: 201,
  headers: { "content-type": "application/json", location: "/payments/p_1" },
  body: new TextEncoder().encode('{"id":"p_1","status":"authorized","amount":"5000"}'),
};

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

async function code(promise: Promise<unknown>, expected: IdempotencyErrorCode): Promise<CasebookError> {
  const err = await rejection(promise);
  assert.ok(idempotencyErrors.is(err, expected), `expected ${expected}, got ${String(err)}`);
  return err;
}

function setup(subject: IdempotencySubject, label: string, startMs = T0) {
  const clock = new ManualClock(startMs);
  const store = idempotencyStore(subject.db, { clock, leaseS: LEASE_MS / 1000 });
  return { clock, store, merchantId: subject.merchant(label) };
}

async function started(store: IdempotencyStore, merchantId: string, key: string, fingerprint = PAY) {
  const begun = await store.begin({ scope: merchantId, key, fingerprint });
  assert.equal(begun.kind, "started");
  return (begun as { lease: IdempotencyLease }).lease;
}

async function effects(q: Queryable, merchantId: string): Promise<string[]> {
  const { rows } = await q.query<{ note: string }>(
    "SELECT note FROM caller_effects WHERE merchant_id = $1 ORDER BY note",
    [merchantId],
  );
  return rows.map((r) => r.note);
}

/** A Queryable that fails the test if anything reaches it: for checks that must refuse before any query. */
const NO_QUERY: Queryable = {
  query: () => assert.fail("no query expected"),
  exec: () => assert.fail("no query expected"),
};

/** The key's raw row (every column `recordMany` may write), or undefined when absent. */
async function rawRow(q: Queryable, merchantId: string, key: string) {
  const { rows } = await q.query(
    `SELECT status, recovery_point, generation, locked_at, completed_at, response_status, response_headers, response_body
       FROM idempotency_keys WHERE merchant_id = $1 AND key = $2`,
    [merchantId, key],
  );
  return rows[0];
}

async function rowsOf(q: Queryable, merchantId: string): Promise<bigint> {
  const { rows } = await q.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM idempotency_keys WHERE merchant_id = $1",
    [merchantId],
  );
  return rows[0]!.n;
}

contractSuite<IdempotencySubject>("idempotency store", idempotencyBackends, (it) => {
  it("PY-01 the first act stores the key in progress; a duplicate cannot start a second charge", async (s) => {
    const { clock, store, merchantId } = setup(s, "py01");
    const lease = await started(store, merchantId, "k1");
    assert.deepEqual(lease, { scope: merchantId, key: "k1", generation: 1, recoveryPoint: RECOVERY_STARTED });
    const entry = await store.find(merchantId, "k1");
    assert.equal(entry?.status, "in_progress");
    assert.equal(entry?.lockedAtMs, T0);
    clock.advance(2_000);
    const err = await code(
      store.begin({ scope: merchantId, key: "k1", fingerprint: PAY }),
      "TEST_IDEMPOTENCY_IN_PROGRESS",
    );
    assert.equal(err.status, 409);
    assert.equal(err.fields.retryAfterMs, LEASE_MS - 2_000);
    assert.equal(await rowsOf(s.db, merchantId), 1n);
  });

  it("renew pushes the claim's lease on while its holder works; a taken-over or completed claim is not renewed", async (s) => {
    const { clock, store, merchantId } = setup(s, "renew");
    const lease = await started(store, merchantId, "k-renew");
    assert.equal(store.leaseMs, LEASE_MS);
    clock.advance(LEASE_MS - 1);
    assert.equal(await store.renew(s.db, lease), true);
    clock.advance(LEASE_MS - 1); // past the first lease, inside the renewed one: still in progress
    await code(
      store.begin({ scope: merchantId, key: "k-renew", fingerprint: PAY }),
      "TEST_IDEMPOTENCY_IN_PROGRESS",
    );
    clock.advance(2); // the renewed lease ran out without another renewal: a retry takes it over
    const retry = await store.begin({ scope: merchantId, key: "k-renew", fingerprint: PAY });
    assert.equal(retry.kind, "started");
    assert.equal(await store.renew(s.db, lease), false, "the old holder's renewal loses");
    const taken = (retry as { lease: IdempotencyLease }).lease;
    await s.db.transaction((tx) => store.complete(tx, taken, CREATED));
    assert.equal(await store.renew(s.db, taken), false, "a completed claim is not renewed");
  });

  it("PY-01 keys are scoped per merchant: one key under two merchants is two requests", async (s) => {
    const { store, merchantId } = setup(s, "scope");
    const otherMerchant = s.merchant("scope_other");
    await started(store, merchantId, "shared-key");
    await started(store, otherMerchant, "shared-key");
  });

  it("PY-02 a sequential duplicate after completion gets the stored response, same status and body", async (s) => {
    const { clock, store, merchantId } = setup(s, "py02");
    const lease = await started(store, merchantId, "k2");
    await s.db.transaction((tx) => store.complete(tx, lease, CREATED));
    clock.advance(5_000);
    const again = await store.begin({ scope: merchantId, key: "k2", fingerprint: PAY });
    assert.deepEqual(again, { kind: "replay", response: CREATED });
    const entry = await store.find(merchantId, "k2");
    assert.equal(entry?.recoveryPoint, RECOVERY_FINISHED);
    assert.equal(entry?.lockedAtMs, null);
  });

  it("PY-04 the same key with different parameters is a 422 naming the mismatch", async (s) => {
    const { store, merchantId } = setup(s, "py04m");
    const lease = await started(store, merchantId, "k3");
    const otherBody = fingerprintRequest({
      method: "POST",
      path: "/payments",
      body: { amount: "9999", currency: "BRL" },
    });
    const err = await code(
      store.begin({ scope: merchantId, key: "k3", fingerprint: otherBody }),
      "TEST_IDEMPOTENCY_MISMATCH",
    );
    assert.equal(err.status, 422);
    assert.deepEqual(err.fields, { mismatch: ["body"] });
    await s.db.transaction((tx) => store.complete(tx, lease, CREATED));
    const otherRoute = { ...PAY, method: "PUT", path: "/refunds" };
    const after = await code(
      store.begin({ scope: merchantId, key: "k3", fingerprint: otherRoute }),
      "TEST_IDEMPOTENCY_MISMATCH",
    );
    assert.deepEqual(after.fields, { mismatch: ["method", "path"] });
    assert.deepEqual(await store.begin({ scope: merchantId, key: "k3", fingerprint: PAY }), {
      kind: "replay",
      response: CREATED,
    });
  });

  it("PY-04 an entry past the retention reads as absent and its key starts afresh", async (s) => {
    const { clock, store, merchantId } = setup(s, "py04ttl");
    const lease = await started(store, merchantId, "k4");
    await s.db.transaction((tx) => store.complete(tx, lease, CREATED));
    clock.advance(DAY_MS - 1);
    assert.equal((await store.begin({ scope: merchantId, key: "k4", fingerprint: PAY })).kind, "replay");
    clock.advance(1);
    assert.equal(await store.find(merchantId, "k4"), undefined);
    const other = fingerprintRequest({ method: "POST", path: "/payments", body: { amount: "1" } });
    const fresh = await started(store, merchantId, "k4", other); // expired: not even a mismatch
    assert.equal(fresh.recoveryPoint, RECOVERY_STARTED);
    assert.equal(fresh.generation, 2); // the old owner's generation is fenced off
    assert.equal((await store.find(merchantId, "k4"))?.status, "in_progress");
  });

  it("PY-04 prune deletes expired keys in bounded batches, oldest first, never a live one", async (s) => {
    // Ten days before every other case's keys, so the cut-off below reaches only this case's rows.
    const startMs = T0 - 10 * DAY_MS;
    const { clock, store, merchantId } = setup(s, "prune", startMs);
    for (const key of ["old-1", "old-2", "old-3", "old-4", "old-5"]) {
      await started(store, merchantId, key);
      clock.advance(1_000);
    }
    clock.setWallMs(startMs + 3_600_000);
    for (const key of ["new-1", "new-2"]) await started(store, merchantId, key);
    clock.setWallMs(startMs + 4_000 + DAY_MS); // every old key is now expired, the new ones are not
    assert.equal(await store.find(merchantId, "old-5"), undefined, "reads ignore expired entries");
    assert.equal(await store.prune({ maxBatch: 2 }), 2);
    const { rows } = await s.db.query<{ key: string }>(
      "SELECT key FROM idempotency_keys WHERE merchant_id = $1 ORDER BY key",
      [merchantId],
    );
    assert.deepEqual(
      rows.map((r) => r.key),
      ["new-1", "new-2", "old-3", "old-4", "old-5"],
      "the oldest go first",
    );
    assert.equal(await store.prune({ maxBatch: 2 }), 2);
    assert.equal(await store.prune({ maxBatch: 2 }), 1);
    assert.equal(await store.prune({ maxBatch: 2 }), 0);
    assert.equal(await rowsOf(s.db, merchantId), 2n);
    assert.ok(await store.find(merchantId, "new-1"));
    const tooYoungMs = clock.nowMs() - DAY_MS + 1;
    await assert.rejects(store.prune({ maxBatch: 2, olderThanMs: tooYoungMs }), RangeError);
    await assert.rejects(store.prune({ maxBatch: 0 }), RangeError);
  });

  it("PY-13 a retry after a lost response replays it byte for byte, without a second saga", async (s) => {
    const { clock, store, merchantId } = setup(s, "py13");
    let authorizations = 0;
    // Bytes a re-serialization would change: spacing, key order, escapes, and non-UTF-8 bytes.
    const body = new Uint8Array([
      ...new TextEncoder().encode('{ "z":1,  "a":"\\u00e9"}\n'),
      0xff,
      0x00,
      0xfe,
    ]);
    const attempt = async (): Promise<StoredResponse> => {
      const begun = await store.begin({ scope: merchantId, key: "k13", fingerprint: PAY });
      if (begun.kind === "replay") return begun.response;
      authorizations += 1; // the saga: reserve, authorize at the acquirer, commit
      const headers = selectReplayHeaders({
        "Content-Type": "application/json",
        "X-Request-Id": "attempt-1",
      });
      const response = { status: 201, headers, body };
      await s.db.transaction(async (tx) => {
        await tx.query("INSERT INTO caller_effects VALUES ($1, $2, 'charged')", [merchantId, "k13"]);
        await store.complete(tx, begun.lease, response);
      });
      return response;
    };
    const first = await attempt(); // its response is lost on the way to the client
    clock.advance(30_000);
    const second = await attempt();
    assert.equal(authorizations, 1);
    assert.deepEqual(await effects(s.db, merchantId), ["charged"]);
    assert.equal(second.status, first.status);
    assert.deepEqual(second.headers, { "content-type": "application/json" });
    assert.ok(Buffer.from(second.body).equals(Buffer.from(body)), "body bytes differ");
  });

  it("PY-18 a retry past a queue's 5-minute dedup window, and a day later, still replays", async (s) => {
    const { clock, store, merchantId } = setup(s, "py18");
    const lease = await started(store, merchantId, "k18");
    await s.db.transaction((tx) => store.complete(tx, lease, CREATED));
    for (const laterMs of [6 * 60_000, 6 * 3_600_000, DAY_MS - 6 * 3_600_000 - 6 * 60_000 - 1]) {
      clock.advance(laterMs);
      assert.deepEqual(await store.begin({ scope: merchantId, key: "k18", fingerprint: PAY }), {
        kind: "replay",
        response: CREATED,
      });
    }
  });

  it("an invalid key is refused before anything is stored", async (s) => {
    const { store, merchantId } = setup(s, "invalid");
    assert.throws(
      () => validateIdempotencyKey("bad key", testIdempotency),
      (err) => idempotencyErrors.is(err),
    );
    await code(store.begin({ scope: merchantId, key: "", fingerprint: PAY }), "TEST_IDEMPOTENCY_KEY_INVALID");
    await code(
      store.begin({ scope: merchantId, key: "x".repeat(256), fingerprint: PAY }),
      "TEST_IDEMPOTENCY_KEY_INVALID",
    );
    assert.equal(await rowsOf(s.db, merchantId), 0n);
  });

  it("advance and complete commit with the caller's writes and roll back with them", async (s) => {
    const { store, merchantId } = setup(s, "atomic");
    let lease = await started(store, merchantId, "k5");
    const failed = new Error("acquirer unreachable");
    const caught = await rejection(
      s.db.transaction(async (tx) => {
        await tx.query("INSERT INTO caller_effects VALUES ($1, 'k5', 'reserved')", [merchantId]);
        await store.advance(tx, lease, "ledger_reserved");
        throw failed;
      }),
    );
    assert.equal(caught, failed);
    assert.equal((await store.find(merchantId, "k5"))?.recoveryPoint, RECOVERY_STARTED);
    assert.deepEqual(await effects(s.db, merchantId), []);
    lease = await s.db.transaction(async (tx) => {
      await tx.query("INSERT INTO caller_effects VALUES ($1, 'k5', 'reserved')", [merchantId]);
      return store.advance(tx, lease, "ledger_reserved");
    });
    assert.equal(lease.recoveryPoint, "ledger_reserved");
    assert.equal((await store.find(merchantId, "k5"))?.recoveryPoint, "ledger_reserved");
    assert.deepEqual(await effects(s.db, merchantId), ["reserved"]);
  });

  it("release before any step deletes the key; after a step it unlocks it for a retry to resume", async (s) => {
    const { store, merchantId } = setup(s, "release");
    const fresh = await started(store, merchantId, "k6");
    assert.equal(await store.release(s.db, fresh), true);
    assert.equal(await store.find(merchantId, "k6"), undefined);
    const other = fingerprintRequest({ method: "POST", path: "/payments", body: { amount: "1" } });
    let lease = await started(store, merchantId, "k6", other); // nothing was stored: any request may use it
    lease = await s.db.transaction((tx) => store.advance(tx, lease, "ledger_reserved"));
    assert.equal(await store.release(s.db, lease), true);
    assert.equal((await store.find(merchantId, "k6"))?.lockedAtMs, null);
    const resumed = await started(store, merchantId, "k6", other); // no wait for the lease
    assert.deepEqual(resumed, {
      scope: merchantId,
      key: "k6",
      generation: lease.generation + 1,
      recoveryPoint: "ledger_reserved",
    });
    assert.equal(await store.release(s.db, lease), false, "a stale lease releases nothing");
    await code(
      s.db.transaction((tx) => store.advance(tx, lease, "authorized")),
      "TEST_IDEMPOTENCY_LOCK_LOST",
    );
  });

  it("a crashed owner's claim is taken over only after the lease, and the old owner is fenced", async (s) => {
    const { clock, store, merchantId } = setup(s, "takeover");
    const first = await started(store, merchantId, "k7");
    clock.advance(10_000);
    const owner = await s.db.transaction((tx) => store.advance(tx, first, "ledger_reserved")); // renews the lease
    clock.advance(LEASE_MS - 1);
    await code(
      store.begin({ scope: merchantId, key: "k7", fingerprint: PAY }),
      "TEST_IDEMPOTENCY_IN_PROGRESS",
    );
    clock.advance(1);
    const retry = await started(store, merchantId, "k7");
    assert.deepEqual(retry, {
      scope: merchantId,
      key: "k7",
      generation: 2,
      recoveryPoint: "ledger_reserved",
    });
    await code(
      store.begin({ scope: merchantId, key: "k7", fingerprint: PAY }),
      "TEST_IDEMPOTENCY_IN_PROGRESS",
    );
    // The old owner wakes up: its final write fails and takes its own writes down with it.
    await code(
      s.db.transaction(async (tx) => {
        await tx.query("INSERT INTO caller_effects VALUES ($1, 'k7', 'old owner')", [merchantId]);
        await store.complete(tx, owner, CREATED);
      }),
      "TEST_IDEMPOTENCY_LOCK_LOST",
    );
    assert.equal(await store.release(s.db, owner), false);
    await s.db.transaction(async (tx) => {
      await tx.query("INSERT INTO caller_effects VALUES ($1, 'k7', 'retry')", [merchantId]);
      await store.complete(tx, retry, CREATED);
    });
    assert.deepEqual(await effects(s.db, merchantId), ["retry"]);
    assert.deepEqual(await store.begin({ scope: merchantId, key: "k7", fingerprint: PAY }), {
      kind: "replay",
      response: CREATED,
    });
  });

  it("recordMany writes a mixed batch of advances and completes; completed keys replay, advanced ones resume", async (s) => {
    const { clock, store, merchantId } = setup(s, "many");
    const [a, b, c, d] = [
      await started(store, merchantId, "k-a"),
      await started(store, merchantId, "k-b"),
      await started(store, merchantId, "k-c"),
      await started(store, merchantId, "k-d"),
    ];
    const noContent: StoredResponse = { status: 204, headers: {}, body: new Uint8Array(0) };
    // Two responses that differ in every part, so a record written to the wrong key shows.
    const declined: StoredResponse = {
      status: 402,
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array([0x00, 0xff, 0x5c, 0x78, 0x27, 0x22, 0xfe, 0x00]),
    };
    clock.advance(10_000);
    const written = await s.db.transaction(async (tx) => {
      await tx.query("INSERT INTO caller_effects VALUES ($1, 'k-a', 'reserved')", [merchantId]);
      return store.recordMany(tx, [
        { lease: b, response: declined },
        { lease: a, step: "ledger_reserved" },
        { lease: c, response: CREATED },
        { lease: d, response: noContent },
      ]);
    });
    assert.deepEqual(written, [true, true, true, true]);
    assert.deepEqual(await effects(s.db, merchantId), ["reserved"]);
    clock.advance(5_000);
    const replayB = await store.begin({ scope: merchantId, key: "k-b", fingerprint: PAY });
    assert.deepEqual(replayB, { kind: "replay", response: declined });
    const bodyB = (replayB as { response: StoredResponse }).response.body;
    assert.ok(Buffer.from(bodyB).equals(Buffer.from(declined.body)), "body bytes differ");
    assert.deepEqual(await store.begin({ scope: merchantId, key: "k-c", fingerprint: PAY }), {
      kind: "replay",
      response: CREATED,
    });
    assert.deepEqual(await store.begin({ scope: merchantId, key: "k-d", fingerprint: PAY }), {
      kind: "replay",
      response: noContent,
    });
    const entryB = await store.find(merchantId, "k-b");
    assert.equal(entryB?.recoveryPoint, RECOVERY_FINISHED);
    assert.equal(entryB?.lockedAtMs, null);
    const entryA = await store.find(merchantId, "k-a");
    assert.equal(entryA?.status, "in_progress");
    assert.equal(entryA?.recoveryPoint, "ledger_reserved");
    assert.equal(entryA?.lockedAtMs, T0 + 10_000, "the advance renewed the lease");
    assert.equal(entryA?.response, undefined);
    clock.setWallMs(T0 + 10_000 + LEASE_MS); // the owner of k-a went silent: a retry takes over
    const resumed = await started(store, merchantId, "k-a");
    assert.deepEqual(resumed, {
      scope: merchantId,
      key: "k-a",
      generation: 2,
      recoveryPoint: "ledger_reserved",
    });
  });

  it("recordMany answers false for a lost lease only and leaves its row unchanged; the others are written", async (s) => {
    const { clock, store, merchantId } = setup(s, "many-lost");
    const kept = await started(store, merchantId, "k-kept");
    const takenOver = await started(store, merchantId, "k-taken");
    const deleted = await started(store, merchantId, "k-deleted");
    const done = await started(store, merchantId, "k-done");
    let unlocked = await started(store, merchantId, "k-unlocked");
    unlocked = await s.db.transaction((tx) => store.advance(tx, unlocked, "ledger_reserved"));
    assert.equal(await store.release(s.db, deleted), true); // nothing committed: the row is gone
    assert.equal(await store.release(s.db, unlocked), true); // past a step: unlocked for a retry
    clock.advance(LEASE_MS);
    const retry = await started(store, merchantId, "k-taken"); // bumps the generation
    assert.equal(retry.generation, takenOver.generation + 1);
    const takenBefore = await rawRow(s.db, merchantId, "k-taken");
    const unlockedBefore = await rawRow(s.db, merchantId, "k-unlocked");
    const written = await s.db.transaction((tx) =>
      store.recordMany(tx, [
        { lease: kept, step: "ledger_reserved" },
        { lease: takenOver, response: CREATED },
        { lease: deleted, step: "ledger_reserved" },
        { lease: unlocked, response: CREATED },
        { lease: done, response: CREATED },
      ]),
    );
    assert.deepEqual(written, [true, false, false, false, true]);
    assert.deepEqual(await rawRow(s.db, merchantId, "k-taken"), takenBefore);
    assert.deepEqual(await rawRow(s.db, merchantId, "k-unlocked"), unlockedBefore);
    assert.equal(await rawRow(s.db, merchantId, "k-deleted"), undefined, "a lost lease creates no row");
    assert.equal((await store.find(merchantId, "k-kept"))?.recoveryPoint, "ledger_reserved");
    assert.equal((await store.find(merchantId, "k-done"))?.status, "completed");
    // The retry still owns its key: its own write goes through.
    assert.deepEqual(
      await s.db.transaction((tx) => store.recordMany(tx, [{ lease: retry, response: CREATED }])),
      [true],
    );
  });

  it("recordManyStatement composes: one row per key still owned, parameters after the caller's", async (s) => {
    const { clock, store, merchantId } = setup(s, "many-record-statement");
    const kept = await started(store, merchantId, "k-a");
    const done = await started(store, merchantId, "k-b");
    const takenOver = await started(store, merchantId, "k-c");
    clock.advance(LEASE_MS);
    await started(store, merchantId, "k-c"); // a retry took it over: its generation moved on
    const recorded = store.recordManyStatement(
      [
        { lease: kept, step: "ledger_reserved" },
        { lease: takenOver, response: CREATED },
        { lease: done, response: CREATED },
      ],
      clock.nowMs(),
      1,
    );
    const { rows } = await s.db.query<{ key: string; tag: string }>(
      `WITH recorded AS (${recorded.text}) SELECT key, $1::text AS tag FROM recorded ORDER BY key`,
      ["mine", ...recorded.params],
    );
    assert.deepEqual(
      rows.map((r) => [r.key, r.tag]),
      [
        ["k-a", "mine"],
        ["k-b", "mine"],
      ],
    );
    assert.equal((await store.find(merchantId, "k-a"))?.recoveryPoint, "ledger_reserved");
    assert.equal((await store.find(merchantId, "k-b"))?.status, "completed");
    assert.equal(
      (await store.find(merchantId, "k-c"))?.recoveryPoint,
      RECOVERY_STARTED,
      "the lost lease wrote nothing",
    );
    assert.throws(() => store.recordManyStatement([], T0, 0), RangeError);
    const twice = [kept, kept].map((lease) => ({ lease, step: "ledger_reserved" }));
    assert.throws(() => store.recordManyStatement(twice, T0, 0), RangeError);
    assert.throws(() => store.recordManyStatement([{ lease: kept, step: "Bad Step" }], T0, 0));
  });

  it("recordMany refuses a key twice, a completed lease, a bad step and an oversized batch before any query", async (s) => {
    const { store, merchantId } = setup(s, "many-checks");
    const lease: IdempotencyLease = {
      scope: merchantId,
      key: "k-c",
      generation: 1,
      recoveryPoint: RECOVERY_STARTED,
    };
    const other: IdempotencyLease = { ...lease, key: "k-other" };
    const finished: IdempotencyLease = { ...lease, recoveryPoint: RECOVERY_FINISHED };
    assert.deepEqual(await store.recordMany(NO_QUERY, []), []);
    await assert.rejects(
      store.recordMany(NO_QUERY, [
        { lease, step: "ledger_reserved" },
        { lease: other, step: "ledger_reserved" },
        { lease: { ...lease, generation: 2 }, response: CREATED },
      ]),
      RangeError,
    );
    await assert.rejects(store.recordMany(NO_QUERY, [{ lease: finished, response: CREATED }]), RangeError);
    await assert.rejects(
      store.recordMany(NO_QUERY, [{ lease: finished, step: "ledger_reserved" }]),
      RangeError,
    );
    for (const step of ["Bad Step", RECOVERY_STARTED, RECOVERY_FINISHED]) {
      const single = await rejection(store.advance(NO_QUERY, lease, step));
      const many = await rejection(
        store.recordMany(NO_QUERY, [
          { lease: other, step: "ledger_reserved" },
          { lease, step },
        ]),
      );
      assert.ok(single instanceof Error && many instanceof Error);
      assert.equal(many.constructor, single.constructor);
      assert.equal(many.message, single.message);
    }
    await assert.rejects(
      store.recordMany(NO_QUERY, [{ lease, response: { ...CREATED, status: 42 } }]),
      RangeError,
    );
    await code(
      store.recordMany(NO_QUERY, [
        { lease, response: { ...CREATED, body: new Uint8Array(RESPONSE_BODY_MAX_BYTES + 1) } },
      ]),
      "TEST_IDEMPOTENCY_RESPONSE_TOO_LARGE",
    );
    const tooMany: IdempotencyRecord[] = Array.from({ length: RECORD_MAX_BATCH + 1 }, (_, i) => ({
      lease: { ...lease, key: `k-${i}` },
      step: "ledger_reserved",
    }));
    await assert.rejects(store.recordMany(NO_QUERY, tooMany), RangeError);
  });
});
