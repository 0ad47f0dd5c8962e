/**
 * What the bank workload checks once the run is over, each against an independent source:
 * - `quiesce`: waits (bounded) until no saga and no refund is left pending in the database;
 * - `acquirerViews`: the acquirer's own record of every payment key (GET by key);
 * - `paymentMismatches` / `refundMismatches`: every payment's terminal state, amounts and ledger
 *   hold agree with that record; every refund row with the acquirer's refund of its key;
 * - `reconcileWithInjectedDifferences`: differences injected into each day's D+1 file at the
 *   simulator, the reconciler run for the day: exactly those become exceptions (PY-10).
 *
 * @example
 * await quiesce(db, 20_000);
 * const views = await acquirerViews(acquirer, keys);
 * assert.deepEqual(await paymentMismatches(db, views), []);
 */
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { listExceptions } from "../src/store/reconciliation-repository.ts";
import { reconcileDate } from "../src/workers/reconciler.ts";
import type { AcquirerProcess } from "./bank-workload-cluster.ts";
import { waitFor } from "./payment-fixture.ts";

/** GETs to the acquirer in flight at once while reading its record of every key. */
const VIEW_CONCURRENCY = 8;
export const DAY_MS = 86_400_000;

export interface AcquirerView {
  id: string;
  status: "approved" | "declined" | "captured" | "voided";
  capturedMinor: string;
  refundedMinor: string;
  attempts: number;
  refunds: Array<{ idempotencyKey: string; amountMinor: string }>;
}

/** Waits until every saga is done and no refund is pending; throws with what is left. */
export async function quiesce(db: Database, timeoutMs: number): Promise<void> {
  const left = async () => {
    const { rows } = await db.query<{ sagas: bigint; refunds: bigint }>(
      `SELECT (SELECT count(*) FROM payments WHERE step <> 'done') AS sagas,
              (SELECT count(*) FROM payment_refunds WHERE status = 'pending') AS refunds`,
    );
    return rows[0]!;
  };
  await waitFor(
    async () => {
      const { sagas, refunds } = await left();
      return sagas === 0n && refunds === 0n ? true : undefined;
    },
    timeoutMs,
    100,
  ).catch(async (error: unknown) => {
    const { rows } = await db.query(
      "SELECT step, status, attempts, lease_owner, count(*)::int4 AS n FROM payments WHERE step <> 'done' GROUP BY 1, 2, 3, 4",
    );
    throw new Error(
      `not quiet after ${timeoutMs} ms: ${JSON.stringify(await left(), stringify)} ${JSON.stringify(rows)}`,
      {
        cause: error,
      },
    );
  });
}

function stringify(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? String(value) : value;
}

/** The acquirer's record of each key (undefined: it never authorized that key). */
export async function acquirerViews(
  acquirer: AcquirerProcess,
  keys: readonly string[],
): Promise<Map<string, AcquirerView | undefined>> {
  const views = new Map<string, AcquirerView | undefined>();
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++]!;
      const res = await acquirer.call("GET", `/v1/authorizations/by-key/${encodeURIComponent(key)}`);
      if (res.status !== 200 && res.status !== 404)
        throw new Error(`GET by-key ${key}: ${res.status} ${res.text}`);
      views.set(key, res.status === 200 ? (res.body as AcquirerView) : undefined);
    }
  };
  await Promise.all(Array.from({ length: VIEW_CONCURRENCY }, worker));
  return views;
}

interface PaymentRow {
  id: bigint;
  acquirer_key: string;
  status: string;
  step: string;
  acquirer_authorization_id: string | null;
  captured_minor: bigint;
  refunded_minor: bigint;
  hold_status: string;
  capture_status: string | null;
}

export async function paymentRows(db: Database): Promise<PaymentRow[]> {
  const { rows } = await db.query<PaymentRow>(
    `SELECT p.id, p.acquirer_key, p.status, p.step, p.acquirer_authorization_id, p.captured_minor,
            p.refunded_minor, h.status AS hold_status, c.status AS capture_status
       FROM payments p JOIN transactions h ON h.id = p.hold_transaction_id
       LEFT JOIN transactions c ON c.id = p.capture_transaction_id ORDER BY p.id`,
  );
  return rows;
}

/** The acquirer's status → ours, and the ledger hold that status leaves behind. */
const EXPECTED: Record<string, { ours: readonly string[]; hold: readonly string[] }> = {
  none: { ours: ["failed"], hold: ["voided"] },
  declined: { ours: ["declined"], hold: ["voided"] },
  approved: { ours: ["authorized"], hold: ["pending"] },
  voided: { ours: ["voided"], hold: ["voided"] },
  // A full capture posts the hold; a partial one voids it and posts the captured part apart.
  captured: { ours: ["captured", "partially_refunded", "refunded"], hold: ["posted", "voided"] },
};

/** Every payment against the acquirer's record of its key; one line per disagreement. */
export function paymentMismatches(
  rows: readonly PaymentRow[],
  views: Map<string, AcquirerView | undefined>,
): string[] {
  const problems: string[] = [];
  for (const p of rows) {
    const view = views.get(p.acquirer_key);
    const expected = EXPECTED[view?.status ?? "none"]!;
    const say = (what: string) => problems.push(`payment ${p.id} (${p.acquirer_key}, ${p.status}): ${what}`);
    if (p.step !== "done") say(`saga not finished, at ${p.step}`);
    if (!expected.ours.includes(p.status)) say(`acquirer says ${view?.status ?? "never authorized"}`);
    if (!expected.hold.includes(p.hold_status)) say(`ledger hold is ${p.hold_status}`);
    if (view === undefined) continue;
    if (p.acquirer_authorization_id !== view.id)
      say(`authorization ${p.acquirer_authorization_id} ≠ ${view.id}`);
    if (String(p.captured_minor) !== view.capturedMinor)
      say(`captured ${p.captured_minor} ≠ ${view.capturedMinor}`);
    if (String(p.refunded_minor) !== view.refundedMinor)
      say(`refunded ${p.refunded_minor} ≠ ${view.refundedMinor}`);
    const partial = view.status === "captured" && p.hold_status === "voided";
    if (partial && p.capture_status !== "posted") say(`partial capture's transfer is ${p.capture_status}`);
  }
  return problems;
}

/** Every refund row against the acquirer's refund of its key, and no acquirer refund we lack. */
export async function refundMismatches(
  db: Database,
  views: Map<string, AcquirerView | undefined>,
): Promise<string[]> {
  const atAcquirer = new Map<string, string>();
  for (const view of views.values())
    for (const r of view?.refunds ?? []) atAcquirer.set(r.idempotencyKey, r.amountMinor);
  const { rows } = await db.query<{ id: bigint; acquirer_key: string; status: string; amount_minor: bigint }>(
    "SELECT id, acquirer_key, status, amount_minor FROM payment_refunds ORDER BY id",
  );
  const problems: string[] = [];
  for (const r of rows) {
    const theirs = atAcquirer.get(r.acquirer_key);
    atAcquirer.delete(r.acquirer_key);
    const say = (what: string) => problems.push(`refund ${r.id} (${r.acquirer_key}, ${r.status}): ${what}`);
    if (r.status === "succeeded" && theirs !== String(r.amount_minor))
      say(`acquirer refunded ${theirs ?? "nothing"}`);
    if (r.status === "failed" && theirs !== undefined) say(`acquirer refunded ${theirs}`);
    if (r.status !== "succeeded" && r.status !== "failed") say("not settled");
  }
  for (const [key, amount] of atAcquirer)
    problems.push(`acquirer refund ${key} of ${amount} has no refund row`);
  return problems;
}

export interface Injected {
  kind: "dropped" | "amount-changed" | "unknown";
  idempotencyKey: string;
  operation: string;
  amountMinor: string;
  originalAmountMinor?: string;
}

const KIND_OF = {
  dropped: "missing_at_acquirer",
  "amount-changed": "amount_mismatch",
  unknown: "missing_in_ledger",
};

/** The UTC dates from `startMs` to `endMs`, both included (two when the run crossed midnight). */
export function utcDates(startMs: number, endMs: number): string[] {
  const dates: string[] = [];
  for (let ms = startMs - (startMs % DAY_MS); ms <= endMs; ms += DAY_MS)
    dates.push(new Date(ms).toISOString().slice(0, 10));
  return dates;
}

export interface ReconciliationOutcome {
  date: string;
  fileRows: number;
  injected: Injected[];
  /** `kind operation key expected actual`, sorted: what the injected differences must become… */
  expected: string[];
  /** …and what the reconciler recorded. */
  recorded: string[];
  feeMismatches: number;
}

/**
 * For one closed day: injects a dropped row, a changed amount and an unknown row (fewer when the
 * file is that short), runs the reconciler from this process, and returns both sides to compare.
 */
export async function reconcileWithInjectedDifferences(
  db: Database,
  acquirer: AcquirerProcess,
  date: string,
  acquirerNowMs: number,
): Promise<ReconciliationOutcome> {
  const file = await acquirer.call("GET", `/v1/settlements/${date}.csv`);
  if (file.status !== 200) throw new Error(`settlement file ${date}: ${file.status} ${file.text}`);
  const rows = file.text.split("\n").filter((line) => line !== "").length - 1;
  const touch = Math.min(1, Math.floor(rows / 2));
  const put = await acquirer.call("PUT", `/admin/settlements/${date}/differences`, {
    dropRows: touch,
    changeAmounts: touch,
    unknownRows: 1,
  });
  if (put.status !== 200) throw new Error(`inject ${date}: ${put.status} ${put.text}`);
  const injected = (put.body as { differences: Injected[] }).differences;
  const summary = await reconcileDate({ db, clock: new ManualClock(acquirerNowMs), feeBps: 150 }, date, {
    acquirerUrl: acquirer.url,
  });
  const recorded = (await listExceptions(db, { date }))
    .filter((e) => e.kind !== "fee_mismatch")
    .map((e) => `${e.kind} ${e.operation} ${e.acquirerKey} ${e.expectedMinor} ${e.actualMinor}`)
    .sort();
  const expected = injected
    .map((d) => {
      const ours = d.kind === "dropped" ? d.amountMinor : (d.originalAmountMinor ?? null);
      const theirs = d.kind === "dropped" ? null : d.amountMinor;
      return `${KIND_OF[d.kind]} ${d.operation} ${d.idempotencyKey} ${ours} ${theirs}`;
    })
    .sort();
  return {
    date,
    fileRows: summary.fileRows,
    injected,
    expected,
    recorded,
    feeMismatches: summary.byKind.fee_mismatch,
  };
}
