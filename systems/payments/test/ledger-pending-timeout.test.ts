/**
 * Pending transfers with a timeout (016, issue 14; TigerBeetle's pending `timeout`), on PGlite
 * and PostgreSQL: past its deadline a hold cannot be posted (in full or in part) and the
 * expirer voids it, releasing its funds; the timeout is part of the request (a retry with
 * another one is `exists_with_different_timeout`); the deadline, set by the database's clock in
 * the creating transaction, cannot be changed afterwards.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { systemRandom } from "@casebook/kit/random";
import { contractSuite } from "@casebook/lab/contract-suite";
import { engineFree } from "@casebook/lab/test-engines";
import { MAX_TIMEOUT_S } from "../src/domain/ledger.ts";
import { ledgerErrors } from "../src/errors.ts";
import { main } from "../src/main.ts";
import { postPartially } from "../src/store/ledger-partial-post.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { PendingExpirer } from "../src/workers/pending-expirer.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";
import { waitFor } from "./payment-fixture.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

async function funded(s: LedgerSubject, amount: bigint) {
  const world = await s.ledger.createAccount({ currency: "USD" });
  const wallet = await s.ledger.createAccount({ currency: "USD", noOverdraft: true });
  await s.ledger.transfer({ idemKey: s.key("fund"), from: world.id, to: wallet.id, amount, currency: "USD" });
  return { world: world.id, wallet: wallet.id };
}

/** Waits until the database's clock is past `at` (the deadline is the database's, not ours). */
async function untilDbPast(s: LedgerSubject, at: Date): Promise<void> {
  for (;;) {
    const { rows } = await s.db.query<{ past: boolean }>("SELECT now() > $1::timestamptz AS past", [at]);
    if (rows[0]!.past) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

contractSuite<LedgerSubject>("ledger pending timeout", ledgerBackends, (it) => {
  it("pending timeout: past its deadline a hold cannot be posted; the expirer voids it and its funds come back", async (s) => {
    const { world, wallet } = await funded(s, 100n);
    const hold = (o: { amount: bigint; timeoutS?: number }) =>
      s.ledger.transfer({
        idemKey: s.key("hold"),
        from: wallet,
        to: world,
        currency: "USD",
        pending: true,
        ...o,
      });
    const short = await hold({ amount: 60n, timeoutS: 1 });
    const part = await hold({ amount: 10n, timeoutS: 1 });
    const long = await hold({ amount: 5n, timeoutS: 3_600 });
    const untimed = await hold({ amount: 20n });
    const t = short.transaction;
    assert.equal(t.timeoutS, 1);
    assert.equal(
      t.expiresAt!.getTime() - t.createdAt.getTime(),
      1_000,
      "deadline = creation + timeout, database clock",
    );
    assert.equal(untimed.transaction.expiresAt, null);
    assert.equal((await s.ledger.balance(wallet)).available, 5n, "every hold reserves its funds");

    await untilDbPast(s, part.transaction.expiresAt!); // the later of the two 1 s holds
    const posted = await rejection(s.ledger.post(t.id));
    assert.ok(ledgerErrors.is(posted, "LEDGER_PENDING_EXPIRED"), String(posted));
    const partial = await rejection(
      s.db.transaction((tx) =>
        postPartially(tx, part.transaction.id, { idemKey: s.key("part"), amountMinor: 4n }),
      ),
    );
    assert.ok(ledgerErrors.is(partial, "LEDGER_PENDING_EXPIRED"), String(partial));

    const expirer = new PendingExpirer(s.ledger, {
      intervalMs: 20,
      random: systemRandom,
      onError: (error) => assert.fail(String(error)),
    });
    expirer.start();
    try {
      for (let i = 0; (await s.ledger.transaction(t.id)).status === "pending"; i++) {
        assert.ok(i < 100, "the expirer voided the hold within 2 s");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await expirer.stop();
    }
    assert.equal((await s.ledger.transaction(t.id)).status, "voided");
    assert.equal((await s.ledger.transaction(part.transaction.id)).status, "voided");
    assert.equal((await s.ledger.transaction(long.transaction.id)).status, "pending", "not yet due");
    assert.equal((await s.ledger.transaction(untimed.transaction.id)).status, "pending", "no timeout: waits");
    assert.equal((await s.ledger.balance(wallet)).available, 75n, "the expired holds' 70 came back");
    const again = await rejection(s.ledger.post(t.id));
    assert.ok(ledgerErrors.is(again, "LEDGER_TRANSACTION_NOT_PENDING"), String(again));
    assert.equal(
      (await s.ledger.post(long.transaction.id)).status,
      "posted",
      "a hold inside its timeout posts",
    );
    await checkLedgerInvariants(s.db);
  });

  it("pending timeout: the timeout is part of the request — the same retry is `exists` with its deadline, another is exists_with_different_timeout", async (s) => {
    const { world, wallet } = await funded(s, 100n);
    const request = {
      idemKey: s.key("t"),
      from: wallet,
      to: world,
      amount: 7n,
      currency: "USD",
      pending: true,
    };
    const [first] = await s.ledger.createTransfers([{ request: { ...request, timeoutS: 60 } }]);
    assert.equal(first!.code, "ok");
    const [same] = await s.ledger.createTransfers([{ request: { ...request, timeoutS: 60 } }]);
    assert.equal(same!.code, "exists");
    assert.ok("transaction" in same! && "transaction" in first!);
    assert.deepEqual(same.transaction!.expiresAt, first.transaction!.expiresAt);
    const second = s.key("t2");
    const outcomes = await s.ledger.createTransfers([
      { request: { ...request, timeoutS: 61 } },
      { request },
      { request: { ...request, idemKey: second, timeoutS: 5 } },
      { request: { ...request, idemKey: second, timeoutS: 6 } },
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.code),
      [
        "exists_with_different_timeout",
        "exists_with_different_timeout",
        "ok",
        "exists_with_different_timeout",
      ],
    );
    // Single transfers, group commit on and off: a retry replays the deadline, another timeout conflicts.
    for (const ledger of [s.ledger, new LedgerRepository(s.db, { groupCommit: false })]) {
      const key = s.key("single");
      const made = await ledger.transfer({ ...request, idemKey: key, timeoutS: 30 });
      assert.equal(made.transaction.timeoutS, 30);
      const replay = await ledger.transfer({ ...request, idemKey: key, timeoutS: 30 });
      assert.equal(replay.replayed, true);
      assert.deepEqual(replay.transaction.expiresAt, made.transaction.expiresAt);
      const other = await rejection(ledger.transfer({ ...request, idemKey: key, timeoutS: 31 }));
      assert.ok(ledgerErrors.is(other, "LEDGER_IDEMPOTENCY_CONFLICT"), String(other));
      await ledger.drain();
    }
  });

  it("pending timeout: a timeout is for pending transfers only, whole seconds in 1..31 days (400 naming timeoutS)", async (s) => {
    const { world, wallet } = await funded(s, 10n);
    const base = { from: wallet, to: world, amount: 1n, currency: "USD" };
    for (const bad of [
      { timeoutS: 60 },
      { pending: true, timeoutS: 0 },
      { pending: true, timeoutS: 1.5 },
      { pending: true, timeoutS: MAX_TIMEOUT_S + 1 },
    ]) {
      const error = await rejection(s.ledger.transfer({ idemKey: s.key("bad"), ...base, ...bad }));
      assert.ok(ledgerErrors.is(error, "LEDGER_TRANSFER_INVALID"), String(error));
      assert.equal((error as { fields?: { field?: string } }).fields?.field, "timeoutS", JSON.stringify(bad));
    }
  });

  it("pending timeout: the deadline cannot be changed or added after the creating transaction (raw SQL)", async (s) => {
    const { world, wallet } = await funded(s, 10n);
    const base = { from: wallet, to: world, amount: 1n, currency: "USD", pending: true };
    const timed = await s.ledger.transfer({ idemKey: s.key("imm"), ...base, timeoutS: 60 });
    const untimed = await s.ledger.transfer({ idemKey: s.key("imm"), ...base });
    for (const [id, set] of [
      [timed.transaction.id, "expires_at = now() + interval '1 day', timeout_s = 86400"],
      [untimed.transaction.id, "expires_at = now() + interval '1 day', timeout_s = 86400"],
      [timed.transaction.id, "expires_at = NULL, timeout_s = NULL"],
    ] as const) {
      const error = await rejection(s.db.query(`UPDATE transactions SET ${set} WHERE id = $1`, [id]));
      assert.match(String(error), /only pending -> posted \| voided may change/);
    }
    assert.deepEqual(
      (await s.ledger.transaction(timed.transaction.id)).expiresAt,
      timed.transaction.expiresAt,
    );
    assert.equal((await s.ledger.transaction(untimed.transaction.id)).expiresAt, null);
  });
});

test("pending timeout: the running service's expirer voids a hold past its timeout", async (t) => {
  if (engineFree(t)) return;
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-expiry-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main(
    { PORT: "0", CASEBOOK_DATA: dataDir, LOG_LEVEL: "silent", PAYMENTS_BOOTSTRAP_MERCHANT: "off" },
    { expirer: { intervalMs: 50 } },
  );
  t.after(() => running.close());
  const ledger = new LedgerRepository(running.db, { groupCommit: false });
  const world = await ledger.createAccount({ currency: "USD" });
  const wallet = await ledger.createAccount({ currency: "USD" });
  const base = { from: world.id, to: wallet.id, amount: 9n, currency: "USD", pending: true };
  const timed = await ledger.transfer({ idemKey: "expiry-1", ...base, timeoutS: 1 });
  const untimed = await ledger.transfer({ idemKey: "expiry-2", ...base });
  await waitFor(
    async () => ((await ledger.transaction(timed.transaction.id)).status === "voided" ? true : undefined),
    30_000,
  );
  assert.equal((await ledger.balance(wallet.id)).pendingCredits, 9n, "only the untimed hold is left");
  assert.equal((await ledger.transaction(untimed.transaction.id)).status, "pending");
});
