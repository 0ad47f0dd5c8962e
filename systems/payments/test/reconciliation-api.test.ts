/**
 * PY-10 the reconciliation exceptions API on PGlite and PostgreSQL: a merchant sees only its own
 * exceptions (another's id, or one whose key none of ours carries, is 404 on read and resolve),
 * lists them oldest first with a keyset cursor and status/kind/date filters, resolves one by
 * `adjust` (NEW ledger entries, once) or `dismiss`; the same action again answers the stored
 * result, the other action 409; bad input is a 400 naming the field and writes nothing.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type TestContext, test } from "node:test";
import { engineFree } from "@casebook/lab/test-engines";
import type { Difference, ExceptionKind } from "../src/domain/reconciliation.ts";
import { main } from "../src/main.ts";
import { recordRun } from "../src/store/reconciliation-repository.ts";
import { balances, paymentBody, type Reply } from "./payment-fixture.ts";
import { type FullFixture, startFullPayments, testOnEngines } from "./payments-full-fixture.ts";

interface Seeded {
  f: FullFixture;
  other: string;
  /** Exception ids: A's three in list order, B's one, and the one nobody owns. */
  a: [string, string, string];
  b: string;
  orphan: string;
  as(merchant: string, method: string, path: string, body?: unknown): Promise<Reply>;
}

async function captured(f: FullFixture, key: string, amount: string, merchant?: string): Promise<bigint> {
  const paid = await f.pay(paymentBody({ amountMinor: amount }), key, merchant);
  // The differences name the internal id (reconciliation-repository.ts), as the reconciler does.
  const { rows } = await f.db.query<{ id: bigint }>("SELECT id FROM payments WHERE public_id = $1", [
    paid.body.id,
  ]);
  const id = rows[0]!.id;
  // On a loaded machine the 2 s inline drive can run out (202 pending): the saga is driven to
  // its end here, as the orchestrator's loop would (bounded); this fixture needs a captured payment.
  let status = paid.body.status;
  const inFlight = (s: unknown) => s === "pending" || s === "authorized";
  for (let tries = 0; inFlight(status) && tries < 100; tries++) {
    const driven = await f.orchestrator.driveById(id); // undefined: another drive holds it
    status =
      driven?.status ??
      (await f.db.query<{ status: string }>("SELECT status FROM payments WHERE id = $1", [id])).rows[0]!
        .status;
    if (inFlight(status)) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.equal(status, "captured");
  return id;
}

function difference(
  kind: ExceptionKind,
  acquirerKey: string,
  paymentId: bigint | null,
  expectedMinor: bigint | null,
  actualMinor: bigint | null,
): Difference {
  return {
    kind,
    operation: "capture",
    acquirerKey,
    expectedMinor,
    actualMinor,
    currency: "BRL",
    paymentId,
    refundId: null,
  };
}

/** Two days of exceptions over merchant A's two payments, merchant B's one, and a key of nobody's. */
async function seeded(t: TestContext, url: string | undefined): Promise<Seeded> {
  const f = await startFullPayments(t, { url });
  const other = `${f.merchant}-b`;
  const a1 = await captured(f, "ex-a1", "5000");
  const a2 = await captured(f, "ex-a2", "3000");
  const b1 = await captured(f, "ex-b1", "4000", other);
  const run = (date: string, differences: Difference[]) =>
    recordRun(f.db, {
      date,
      source: "test",
      fileRows: 3,
      matched: 0,
      differences,
      startedAtMs: 0,
      nowMs: Date.now(),
    });
  await run("2026-10-20", [
    difference("amount_mismatch", `${f.merchant}:ex-a1`, a1, 5000n, 5100n),
    difference("missing_in_ledger", "unknown-nobody", null, null, 999n),
  ]);
  await run("2026-10-21", [
    difference("fee_mismatch", `${f.merchant}:ex-a2`, a2, 45n, 60n),
    difference("missing_at_acquirer", `${other}:ex-b1`, b1, 4000n, null),
    difference("amount_mismatch", `${f.merchant}:ex-a2`, a2, 3000n, 2900n),
  ]);
  const { rows } = await f.db.query<{ id: bigint; merchant_id: string | null }>(
    "SELECT id, merchant_id FROM reconciliation_exceptions ORDER BY id",
  );
  const ids = (who: string | null) => rows.filter((r) => r.merchant_id === who).map((r) => String(r.id));
  const as = (merchant: string, method: string, path: string, body?: unknown) =>
    f.call(method, path, body, { "x-test-merchant": merchant });
  return { f, other, a: ids(f.merchant) as Seeded["a"], b: ids(other)[0]!, orphan: ids(null)[0]!, as };
}

const LIST = "/v1/reconciliation/exceptions";

testOnEngines(
  "PY-10 exceptions API: a merchant lists only its own, oldest first, by page, filtered by status, kind and date",
  async (t, url) => {
    const s = await seeded(t, url);
    const me = s.f.merchant;
    const first = await s.as(me, "GET", `${LIST}?limit=2`);
    assert.equal(first.status, 200, first.text);
    const ids = (reply: Reply) => (reply.body.items as { id: string }[]).map((e) => e.id);
    assert.deepEqual(ids(first), s.a.slice(0, 2));
    assert.equal(typeof first.body.nextCursor, "string");
    const second = await s.as(me, "GET", `${LIST}?limit=2&cursor=${first.body.nextCursor}`);
    assert.deepEqual(ids(second), [s.a[2]]);
    assert.equal(second.body.nextCursor, null, "the last page says so");
    const item = (first.body.items as Record<string, unknown>[])[0]!;
    assert.deepEqual(
      [item.kind, item.settlementDate, item.expectedMinor, item.actualMinor, item.status],
      ["amount_mismatch", "2026-10-20", "5000", "5100", "open"],
    );
    // The payment is named by its public id (public-ids.ts), never the internal one.
    const { rows } = await s.f.db.query<{ public_id: string }>(
      "SELECT public_id FROM payments WHERE acquirer_key = $1",
      [item.acquirerKey],
    );
    assert.match(String(item.paymentId), /^pay_[0-9a-f]{32}$/);
    assert.equal(item.paymentId, rows[0]!.public_id);
    assert.deepEqual(ids(await s.as(me, "GET", `${LIST}?kind=fee_mismatch`)), [s.a[1]]);
    assert.deepEqual(ids(await s.as(me, "GET", `${LIST}?from=2026-10-21`)), [s.a[1], s.a[2]]);
    assert.deepEqual(ids(await s.as(me, "GET", `${LIST}?from=2026-10-20&to=2026-10-20`)), [s.a[0]]);
    assert.deepEqual(ids(await s.as(me, "GET", `${LIST}?status=resolved`)), []);
    assert.deepEqual(ids(await s.as(s.other, "GET", LIST)), [s.b], "the other merchant sees its one");
  },
);

testOnEngines(
  "PY-10 exceptions API: another merchant's exception, or one nobody owns, is 404 on read and on resolve, and stays open",
  async (t, url) => {
    const s = await seeded(t, url);
    for (const id of [s.b, s.orphan, "999999"]) {
      const read = await s.as(s.f.merchant, "GET", `${LIST}/${id}`);
      assert.equal(read.status, 404, id);
      assert.equal(read.body.code, "PAYMENTS_RECON_EXCEPTION_NOT_FOUND");
      const resolved = await s.as(s.f.merchant, "POST", `${LIST}/${id}/resolve`, {
        action: "dismiss",
        note: "n",
      });
      assert.equal(resolved.status, 404, id);
    }
    const own = await s.as(s.other, "GET", `${LIST}/${s.b}`);
    assert.equal(own.status, 200);
    assert.equal(own.body.status, "open", "the foreign resolve changed nothing");
    assert.equal(own.body.kind, "missing_at_acquirer");
  },
);

async function ledgerTransactions(f: FullFixture): Promise<bigint> {
  const { rows } = await f.db.query<{ n: bigint }>("SELECT count(*) AS n FROM transactions");
  return rows[0]!.n;
}

testOnEngines(
  "PY-10 exceptions API: adjust books new ledger entries once; the same action again answers the stored result, the other is 409",
  async (t, url) => {
    const s = await seeded(t, url);
    const me = s.f.merchant;
    const pendingBefore = (await balances(s.f.db, me)).merchant_pending!.posted;
    const before = await ledgerTransactions(s.f);
    const adjusted = await s.as(me, "POST", `${LIST}/${s.a[0]}/resolve`, {
      action: "adjust",
      note: "acquirer is right",
    });
    assert.equal(adjusted.status, 200, adjusted.text);
    assert.equal(adjusted.body.status, "resolved");
    assert.equal(adjusted.body.resolutionAction, "adjust");
    assert.equal(adjusted.body.resolution, "acquirer is right");
    assert.equal(await ledgerTransactions(s.f), before + 1n, "one NEW transaction");
    const { rows } = await s.f.db.query<{ idem_key: string; status: string }>(
      "SELECT idem_key, status FROM transactions WHERE id = $1",
      [BigInt(String(adjusted.body.adjustmentTransactionId))],
    );
    assert.deepEqual({ ...rows[0] }, { idem_key: `recon:${s.a[0]}`, status: "posted" });
    assert.equal((await balances(s.f.db, me)).merchant_pending!.posted, pendingBefore + 100n);
    const repeated = await s.as(me, "POST", `${LIST}/${s.a[0]}/resolve`, { action: "adjust", note: "again" });
    assert.equal(repeated.status, 200);
    assert.equal(repeated.text, adjusted.text, "the stored result: the first note, nothing booked again");
    assert.equal(await ledgerTransactions(s.f), before + 1n);
    const contradicted = await s.as(me, "POST", `${LIST}/${s.a[0]}/resolve`, {
      action: "dismiss",
      note: "no",
    });
    assert.equal(contradicted.status, 409);
    assert.equal(contradicted.body.code, "PAYMENTS_RECON_EXCEPTION_RESOLVED");
    assert.equal(contradicted.body.resolutionAction, "adjust");
    const fee = await s.as(me, "POST", `${LIST}/${s.a[1]}/resolve`, { action: "adjust" });
    assert.equal(fee.status, 200, fee.text);
    assert.equal(
      (await balances(s.f.db, me)).merchant_pending!.posted,
      pendingBefore + 100n - 15n,
      "fee delta",
    );
    const dismissed = await s.as(me, "POST", `${LIST}/${s.a[2]}/resolve`, {
      action: "dismiss",
      note: "file fixed",
    });
    assert.equal(dismissed.body.adjustmentTransactionId, null);
    assert.equal(
      (await s.as(me, "POST", `${LIST}/${s.a[2]}/resolve`, { action: "dismiss", note: "x" })).text,
      dismissed.text,
    );
    assert.equal(await ledgerTransactions(s.f), before + 2n, "dismiss books nothing");
    const open = await s.as(me, "GET", `${LIST}?status=open`);
    assert.deepEqual(open.body.items, []);
  },
);

testOnEngines(
  "PY-10 exceptions API: bad input is a 400 naming the field, and writes nothing",
  async (t, url) => {
    const s = await seeded(t, url);
    const me = s.f.merchant;
    const before = await ledgerTransactions(s.f);
    const field = async (reply: Promise<Reply>) => {
      const got = await reply;
      assert.equal(got.status, 400, got.text);
      return (got.body.errors as { field: string }[]).map((e) => e.field);
    };
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?status=closed`)), ["/querystring/status"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?limit=0`)), ["/querystring/limit"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?kind=other`)), ["/querystring/kind"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?from=2026-02-30`)), ["/querystring/from"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?from=2026-10-21&to=2026-10-20`)), [
      "/querystring/to",
    ]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?cursor=not-ours`)), ["/querystring/cursor"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}?page=2`)), ["/querystring/page"]);
    assert.deepEqual(await field(s.as(me, "GET", `${LIST}/abc`)), ["/params/id"]);
    const resolve = `${LIST}/${s.a[0]}/resolve`;
    assert.deepEqual(await field(s.as(me, "POST", resolve, { action: "fix" })), ["/body/action"]);
    assert.deepEqual(await field(s.as(me, "POST", resolve, { note: "why" })), ["/body/action"]);
    assert.deepEqual(await field(s.as(me, "POST", resolve, { action: "dismiss" })), ["/body/note"]);
    assert.deepEqual(await field(s.as(me, "POST", resolve, { action: "adjust", amount: 1 })), [
      "/body/amount",
    ]);
    assert.deepEqual(await field(s.as(me, "POST", resolve, { action: "dismiss", note: "" })), ["/body/note"]);
    assert.equal((await s.as(me, "GET", `${LIST}/${s.a[0]}`)).body.status, "open");
    assert.equal(await ledgerTransactions(s.f), before);
  },
);

test("PY-10 main() serves the exceptions API behind the merchant's key, documented in /openapi.json", async (t) => {
  if (engineFree(t)) return;
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-recon-api-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const auth = { authorization: `Bearer ${running.bootstrap!.apiKey}` };
  const listed = await fetch(`${running.url}${LIST}`, { headers: auth });
  assert.equal(listed.status, 200);
  assert.deepEqual(await listed.json(), { items: [], nextCursor: null });
  assert.equal((await fetch(`${running.url}${LIST}`)).status, 401, "no key, no exceptions");
  const openapi = (await (await fetch(`${running.url}/openapi.json`)).json()) as { paths: object };
  for (const path of [LIST, `${LIST}/{id}`, `${LIST}/{id}/resolve`]) assert.ok(path in openapi.paths, path);
});
