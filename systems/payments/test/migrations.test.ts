/**
 * The system's migrations, all of them, in order, on both engines — and a second run changes
 * nothing. And the upgrade of a data directory made by the code before 009 (the lease
 * vocabulary): its rows read back, and are claimed, through today's repositories.
 */
import assert from "node:assert/strict";
import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { normalizeTransfer } from "../src/domain/ledger.ts";
import { claimDue, ensureMerchantAccounts, findPayment } from "../src/store/payment-repository.ts";
import { claimDueRefunds, findRefundByKey } from "../src/store/refund-repository.ts";
import { bookHoldWith007 } from "./ledger-write-007.ts";

const dir = new URL("../src/store/migrations/", import.meta.url);
const expected = [
  "001_ledger",
  "002_idempotency",
  "003_payments",
  "004_outbox",
  "005_merchants",
  "006_reconciliation",
  "007_ledger_write",
  "008_capture_refund_retry_fees",
  "009_lease_vocabulary",
  "011_outbox_lease_vocabulary",
  "012_api_key_usage",
  "013_opaque_ids",
  "015_ledger_group_commit",
  "016_ledger_pending_timeout",
  "017_merchant_ledger_accounts",
  "018_ledger_write_serial",
  "019_ledger_late_entries",
  "020_ledger_settle",
  "021_payments_require",
];

test("every migration applies in order on PGlite, once", async (t) => {
  if (engineFree(t)) return;
  const db = await openDatabase({ system: "payments", dataDir: "memory://" });
  try {
    assert.deepEqual((await runMigrations(db, { dir })).applied, expected);
    assert.deepEqual((await runMigrations(db, { dir })).applied, []);
  } finally {
    await db.close();
  }
});

test("every migration applies in order on PostgreSQL, once", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const schema = uniqueName("payments_migrations");
  const db = await openDatabase({ system: "payments", url, schema });
  try {
    assert.deepEqual((await runMigrations(db, { dir })).applied, expected);
    assert.deepEqual((await runMigrations(db, { dir })).applied, []);
  } finally {
    await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    await db.close();
  }
});

const T0 = Date.UTC(2026, 0, 1);
const MERCHANT = "m-upgrade";

/** A payment row as the code before 009 wrote it (lease_until, version, next_run_at), its hold booked. */
async function oldPayment(
  db: Awaited<ReturnType<typeof openDatabase>>,
  key: string,
  row: {
    step: string;
    status: string;
    capturedMinor: bigint;
    owner: string | null;
    leaseUntilMs: number | null;
    version: bigint;
  },
): Promise<bigint> {
  return db.transaction(async (tx) => {
    const { customerFunds, merchantPending } = await ensureMerchantAccounts(tx, MERCHANT, "EUR");
    // The hold the payment references (its key is the test's: only the row's shape matters here),
    // booked through the ledger_write of that schema (007's ten arrays; 018 changed the call).
    const transfer = normalizeTransfer({
      idemKey: `upgrade:${key}`,
      from: customerFunds,
      to: merchantPending,
      amount: 5_000n,
      currency: "EUR",
      pending: true,
    });
    const hold = { transaction: { id: await bookHoldWith007(tx, transfer) } };
    const { rows } = await tx.query<{ id: bigint }>(
      `INSERT INTO payments (merchant_id, idempotency_key, acquirer_key, amount_minor, currency, card_token, capture,
         status, step, intent, next_run_at, lease_owner, lease_until, version, idem_generation, hold_transaction_id,
         captured_minor, started_at, created_at, updated_at)
       SELECT $1, $2, $1 || ':' || $2, 5000, 'EUR', 'tok_visa', true, r.status, r.step, 'authorize', $3, r.owner,
              r.lease_until, r.version, 1, $4, r.captured_minor, $3, $3, $3
         FROM jsonb_to_record($5::jsonb)
           AS r(status text, step text, owner text, lease_until timestamptz, version int8, captured_minor int8)
       RETURNING id`,
      [
        MERCHANT,
        key,
        new Date(T0),
        hold!.transaction.id,
        JSON.stringify({
          status: row.status,
          step: row.step,
          owner: row.owner,
          lease_until: row.leaseUntilMs === null ? null : new Date(row.leaseUntilMs).toISOString(),
          version: String(row.version),
          captured_minor: String(row.capturedMinor),
        }),
      ],
    );
    return rows[0]!.id;
  });
}

test("009 upgrades a PGlite data directory made by 001–008: a saga mid-lease and a pending refund read back and are claimed", async (t) => {
  if (engineFree(t)) return;
  const root = await mkdtemp(join(tmpdir(), "payments-upgrade-"));
  try {
    const oldDir = join(root, "migrations-001-008");
    await mkdir(oldDir);
    const all = (await readdir(fileURLToPath(dir))).filter((f) => f.endsWith(".sql")).sort();
    for (const file of all.filter((f) => f < "009"))
      await copyFile(join(fileURLToPath(dir), file), join(oldDir, file));
    const dataDir = join(root, "data");

    // Today's code before 009: the old column names.
    const before = await openDatabase({ system: "payments", dataDir, env: {} });
    let sagaId: bigint;
    try {
      assert.deepEqual((await runMigrations(before, { dir: oldDir })).applied, expected.slice(0, 8));
      sagaId = await oldPayment(before, "mid-saga", {
        step: "authorize",
        status: "pending",
        capturedMinor: 0n,
        owner: "old-host:41:abcd0123",
        leaseUntilMs: T0 + 30_000,
        version: 3n,
      });
      const capturedId = await oldPayment(before, "captured", {
        step: "done",
        status: "captured",
        capturedMinor: 5_000n,
        owner: null,
        leaseUntilMs: null,
        version: 6n,
      });
      await before.query(
        `INSERT INTO payment_refunds (payment_id, merchant_id, idempotency_key, acquirer_key, amount_minor, status,
           attempts, next_run_at, lease_owner, lease_until, version, idem_generation, created_at, updated_at)
         VALUES ($1, $2, 'refund-1', $3, 1200, 'pending', 2, $4, NULL, NULL, 4, 1, $5, $5)`,
        [capturedId, MERCHANT, `${MERCHANT}:captured:refund:refund-1`, new Date(T0 + 5_000), new Date(T0)],
      );
      await before.query("UPDATE payments SET refunded_minor = 1200 WHERE id = $1", [capturedId]);
    } finally {
      await before.close();
    }

    // Today's code: the full set upgrades the directory in place.
    const db = await openDatabase({ system: "payments", dataDir, env: {} });
    try {
      assert.deepEqual(
        (await runMigrations(db, { dir })).applied,
        expected.slice(8),
        "every migration after 008, 009 among them",
      );
      const saga = await findPayment(db, MERCHANT, sagaId);
      assert.deepEqual(
        [
          saga?.step,
          saga?.leaseOwner,
          saga?.leaseExpiresAt?.getTime(),
          saga?.leaseVersion,
          saga?.nextAttemptAt.getTime(),
        ],
        ["authorize", "old-host:41:abcd0123", T0 + 30_000, 3n, T0],
        "the saga reads back with its lease",
      );
      const refund = await findRefundByKey(db, MERCHANT, "refund-1");
      assert.deepEqual(
        [
          refund?.status,
          refund?.attempts,
          refund?.leaseOwner,
          refund?.leaseVersion,
          refund?.nextAttemptAt.getTime(),
        ],
        ["pending", 2, null, 4n, T0 + 5_000],
      );

      const claim = (nowMs: number) =>
        claimDue(db, { owner: "new-owner", nowMs, leaseMs: 10_000, maxBatch: 10 });
      assert.deepEqual(await claim(T0 + 29_999), [], "the old owner's lease still holds after the upgrade");
      const [taken] = await claim(T0 + 30_000);
      assert.deepEqual(
        [
          taken?.id,
          taken?.takenOver,
          taken?.leaseOwner,
          taken?.leaseVersion,
          taken?.leaseExpiresAt?.getTime(),
        ],
        [sagaId, true, "new-owner", 4n, T0 + 40_000],
        "claimed once its lease ended, the version fencing the old owner",
      );
      const refunds = await claimDueRefunds(db, {
        owner: "new-owner",
        nowMs: T0 + 5_000,
        leaseMs: 10_000,
        maxBatch: 10,
      });
      assert.deepEqual(
        refunds.map((r) => [r.id, r.leaseOwner, r.leaseVersion]),
        [[refund!.id, "new-owner", 5n]],
      );

      const { rows: names } = await db.query<{ conname: string }>(
        `SELECT conname FROM pg_constraint WHERE conname IN ('payments_lease_whole', 'payment_refunds_lease_whole')
          ORDER BY conname`,
      );
      assert.deepEqual(
        names.map((r) => r.conname),
        ["payment_refunds_lease_whole", "payments_lease_whole"],
      );
      const { rows: old } = await db.query<{ n: bigint }>(
        `SELECT count(*) AS n FROM information_schema.columns
          WHERE table_name IN ('payments', 'payment_refunds') AND column_name IN ('lease_until', 'version', 'next_run_at')`,
      );
      assert.equal(old[0]!.n, 0n, "no column of the old vocabulary is left");
      await assert.rejects(
        db.query("UPDATE payments SET lease_expires_at = NULL WHERE id = $1", [sagaId]),
        /payments_lease_whole/,
        "the renamed CHECK still pairs owner and expiry",
      );
    } finally {
      await db.close();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
