/**
 * The ledger API (issue 14) through HTTP (fastify inject), on PGlite and PostgreSQL, wired as
 * main.ts wires it: accounts opened under an Idempotency-Key, balances, entries in cursor pages,
 * single transfers through the group commit answering TigerBeetle's result codes, pending →
 * post/void, the batch endpoint with `linked` chains, tenancy (another merchant's account or
 * transfer is 404, and nothing is written), and bad input per field (400 naming it).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Service } from "@casebook/infra/http/service";
import { type Backend, contractSuite } from "@casebook/lab/contract-suite";
import { engineFree } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { ensureMerchantAccounts } from "../src/store/merchant-accounts.ts";
import { merchantApiService } from "./merchant-api-service.ts";
import { type MerchantSubject, merchantBackends, openPgliteMemory, subjectOf } from "./merchant-backends.ts";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by the assertions themselves
type Json = any;

interface Reply {
  status: number;
  body: Json;
}

interface LedgerApiSubject extends MerchantSubject {
  service: Service;
  call(method: "GET" | "POST", url: string, key: string, body?: unknown, idem?: string): Promise<Reply>;
  merchant(label: string): Promise<{ id: string; key: string }>;
}

async function apiOf(subject: MerchantSubject): Promise<LedgerApiSubject> {
  const service = await merchantApiService(subject);
  return {
    ...subject,
    service,
    async call(method, url, key, body, idem) {
      const headers: Record<string, string> = { authorization: `Bearer ${key}` };
      if (body !== undefined) headers["content-type"] = "application/json";
      if (idem !== undefined) headers["idempotency-key"] = idem;
      const res = await service.app.inject({
        method,
        url,
        headers,
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      return { status: res.statusCode, body: res.json() };
    },
    async merchant(label) {
      const { merchant, apiKey } = await subject.merchants.create({ id: subject.id(label), name: label });
      return { id: merchant.id, key: apiKey.key };
    },
  };
}

const backends: Backend<LedgerApiSubject>[] = merchantBackends.map((backend) => ({
  name: backend.name,
  embedded: backend.embedded,
  async open(t) {
    const opened = await backend.open(t);
    if (!opened) return undefined;
    const api = await apiOf(opened.subject);
    return {
      subject: api,
      close: async () => {
        await api.service.close();
        await opened.subject.ledger.drain();
        await opened.close();
      },
    };
  },
}));

let keys = 0;
const fresh = (label: string) => `${label}-${++keys}`;

/** Opens an account; answers its id. */
async function open(s: LedgerApiSubject, key: string, body: Record<string, unknown>): Promise<string> {
  const res = await s.call("POST", "/v1/ledger/accounts", key, body, fresh("acct"));
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** A funded no-overdraft wallet and the overdraft-allowed source that funded it. */
async function funded(s: LedgerApiSubject, key: string, amount: number) {
  const source = await open(s, key, { currency: "USD" });
  const wallet = await open(s, key, { currency: "USD", noOverdraft: true });
  const res = await s.call(
    "POST",
    "/v1/ledger/transfers",
    key,
    { debitAccountId: source, creditAccountId: wallet, amountMinor: amount, currency: "USD" },
    fresh("fund"),
  );
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { source, wallet };
}

async function balances(s: LedgerApiSubject, key: string, id: string) {
  const res = await s.call("GET", `/v1/ledger/accounts/${id}`, key);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.balances;
}

function assertNames(res: Reply, field: string, status = 400) {
  assert.equal(res.status, status, JSON.stringify(res.body));
  const fields = (res.body.errors ?? []).map((e: { field: string }) => e.field);
  assert.ok(fields.includes(field), `expected ${field} among ${JSON.stringify(res.body)}`);
}

contractSuite("ledger API", backends, (it) => {
  it("an account opens once per Idempotency-Key: 201, the retry 200 with the same account, other parameters 422", async (s) => {
    const m = await s.merchant("m");
    const body = { currency: "EUR", noOverdraft: true, metadata: { owner: "alice" } };
    const first = await s.call("POST", "/v1/ledger/accounts", m.key, body, "open-1");
    assert.equal(first.status, 201);
    assert.deepEqual(
      { ...first.body, id: undefined, createdAt: undefined },
      {
        ...body,
        id: undefined,
        createdAt: undefined,
        balances: { posted: "0", pending: "0", available: "0" },
      },
    );
    const again = await s.call("POST", "/v1/ledger/accounts", m.key, body, "open-1");
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, first.body);
    const other = await s.call("POST", "/v1/ledger/accounts", m.key, { currency: "USD" }, "open-1");
    assert.equal(other.status, 422);
    assert.equal(other.body.code, "LEDGER_IDEMPOTENCY_CONFLICT");
    const missing = await s.call("POST", "/v1/ledger/accounts", m.key, body);
    assert.equal(missing.body.code, "PAYMENTS_IDEMPOTENCY_KEY_MISSING");
    // The same key under another merchant is that merchant's own account.
    const n = await s.merchant("n");
    const theirs = await s.call("POST", "/v1/ledger/accounts", n.key, body, "open-1");
    assert.equal(theirs.status, 201);
    assert.notEqual(theirs.body.id, first.body.id);
  });

  it("a transfer is ok (201), its retry exists (200, the same transfer), other fields exists_with_different_* (422)", async (s) => {
    const m = await s.merchant("m");
    const { source, wallet } = await funded(s, m.key, 1_000);
    const body = { debitAccountId: wallet, creditAccountId: source, amountMinor: "300", currency: "USD" };
    const ok = await s.call("POST", "/v1/ledger/transfers", m.key, body, "t-1");
    assert.equal(ok.status, 201);
    assert.equal(ok.body.result, "ok");
    assert.deepEqual(
      { ...ok.body.transfer, id: undefined, createdAt: undefined },
      {
        ...body,
        id: undefined,
        createdAt: undefined,
        status: "posted",
        timeoutS: null,
        expiresAt: null,
        metadata: {},
      },
    );
    const retry = await s.call("POST", "/v1/ledger/transfers", m.key, body, "t-1");
    assert.equal(retry.status, 200);
    assert.equal(retry.body.result, "exists");
    assert.deepEqual(retry.body.transfer, ok.body.transfer);
    const other = await s.call("POST", "/v1/ledger/transfers", m.key, { ...body, amountMinor: 301 }, "t-1");
    assert.equal(other.status, 422);
    assert.equal(other.body.result, "exists_with_different_entries");
    const meta = await s.call("POST", "/v1/ledger/transfers", m.key, { ...body, metadata: { a: 1 } }, "t-1");
    assert.equal(meta.body.result, "exists_with_different_metadata");
    assert.deepEqual(await balances(s, m.key, wallet), { posted: "700", pending: "0", available: "700" });
    assert.deepEqual(await balances(s, m.key, source), { posted: "-700", pending: "0", available: "-700" });
  });

  it("refusals answer TigerBeetle's codes: exceeds_credits 422, currency_mismatch 422; nothing is written", async (s) => {
    const m = await s.merchant("m");
    const { source, wallet } = await funded(s, m.key, 100);
    const over = await s.call(
      "POST",
      "/v1/ledger/transfers",
      m.key,
      { debitAccountId: wallet, creditAccountId: source, amountMinor: 101, currency: "USD" },
      fresh("t"),
    );
    assert.equal(over.status, 422);
    assert.equal(over.body.code, "LEDGER_INSUFFICIENT_FUNDS");
    assert.equal(over.body.result, "exceeds_credits");
    assert.deepEqual(over.body.accountIds, [wallet]);
    const eur = await open(s, m.key, { currency: "EUR" });
    const mismatch = await s.call(
      "POST",
      "/v1/ledger/transfers",
      m.key,
      { debitAccountId: source, creditAccountId: eur, amountMinor: 1, currency: "USD" },
      fresh("t"),
    );
    assert.equal(mismatch.status, 422);
    assert.equal(mismatch.body.result, "currency_mismatch");
    assert.equal(mismatch.body.accountId, eur);
    assert.deepEqual(await balances(s, m.key, wallet), { posted: "100", pending: "0", available: "100" });
  });

  it("a pending transfer with timeoutS holds funds; post moves them, void releases them, a final one is 409", async (s) => {
    const m = await s.merchant("m");
    const { source, wallet } = await funded(s, m.key, 1_000);
    const hold = (amount: number) =>
      s.call(
        "POST",
        "/v1/ledger/transfers",
        m.key,
        {
          debitAccountId: wallet,
          creditAccountId: source,
          amountMinor: amount,
          currency: "USD",
          pending: true,
          timeoutS: 3_600,
        },
        fresh("hold"),
      );
    const a = await hold(200);
    assert.equal(a.status, 201);
    assert.equal(a.body.transfer.status, "pending");
    assert.equal(a.body.transfer.timeoutS, 3_600);
    assert.ok(Date.parse(a.body.transfer.expiresAt) > Date.now());
    const b = await hold(300);
    assert.deepEqual(await balances(s, m.key, wallet), { posted: "1000", pending: "-500", available: "500" });
    const posted = await s.call("POST", `/v1/ledger/transfers/${a.body.transfer.id}/post`, m.key);
    assert.equal(posted.status, 200);
    assert.equal(posted.body.status, "posted");
    const voided = await s.call("POST", `/v1/ledger/transfers/${b.body.transfer.id}/void`, m.key);
    assert.equal(voided.body.status, "voided");
    assert.deepEqual(await balances(s, m.key, wallet), { posted: "800", pending: "0", available: "800" });
    const again = await s.call("POST", `/v1/ledger/transfers/${b.body.transfer.id}/post`, m.key);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, "LEDGER_TRANSACTION_NOT_PENDING");
  });

  it("an account's entries come in cursor pages, newest first, each entry once", async (s) => {
    const m = await s.merchant("m");
    const { source, wallet } = await funded(s, m.key, 1_000);
    for (const amount of [1, 2, 3, 4]) {
      const res = await s.call(
        "POST",
        "/v1/ledger/transfers",
        m.key,
        { debitAccountId: wallet, creditAccountId: source, amountMinor: amount, currency: "USD" },
        fresh("e"),
      );
      assert.equal(res.status, 201);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = cursor === null ? "?limit=2" : `?limit=2&cursor=${encodeURIComponent(cursor)}`;
      const page = await s.call("GET", `/v1/ledger/accounts/${wallet}/entries${query}`, m.key);
      assert.equal(page.status, 200);
      assert.ok(page.body.items.length <= 2);
      seen.push(
        ...page.body.items.map(
          (e: { direction: string; amountMinor: string }) => `${e.direction}${e.amountMinor}`,
        ),
      );
      cursor = page.body.nextCursor;
      pages++;
    } while (cursor !== null);
    assert.deepEqual(seen, ["D4", "D3", "D2", "D1", "C1000"]);
    assert.equal(pages, 3);
    const bad = await s.call("GET", `/v1/ledger/accounts/${wallet}/entries?cursor=nope`, m.key);
    assert.equal(bad.status, 400);
    assertNames(
      await s.call("GET", `/v1/ledger/accounts/${wallet}/entries?limit=101`, m.key),
      "/querystring/limit",
    );
  });

  it("tenancy: another merchant's account or transfer, or a payment's own account, is 404 and nothing moves", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const mine = await funded(s, a.key, 500);
    const theirs = await funded(s, b.key, 500);
    for (const path of [
      `/v1/ledger/accounts/${theirs.wallet}`,
      `/v1/ledger/accounts/${theirs.wallet}/entries`,
    ]) {
      const res = await s.call("GET", path, a.key);
      assert.equal(res.status, 404);
      assert.equal(res.body.code, "LEDGER_ACCOUNT_NOT_FOUND");
    }
    const payments = await s.db.transaction((tx) => ensureMerchantAccounts(tx, a.id, "USD"));
    for (const foreign of [theirs.wallet, String(payments.merchant_available), "999999999999"]) {
      const res = await s.call(
        "POST",
        "/v1/ledger/transfers",
        a.key,
        { debitAccountId: mine.wallet, creditAccountId: foreign, amountMinor: 10, currency: "USD" },
        fresh("steal"),
      );
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.result, "account_not_found");
      assert.equal(res.body.accountId, foreign);
    }
    const hold = await s.call(
      "POST",
      "/v1/ledger/transfers",
      b.key,
      {
        debitAccountId: theirs.wallet,
        creditAccountId: theirs.source,
        amountMinor: 5,
        currency: "USD",
        pending: true,
      },
      fresh("hold"),
    );
    const post = await s.call("POST", `/v1/ledger/transfers/${hold.body.transfer.id}/post`, a.key);
    assert.equal(post.status, 404);
    assert.equal(post.body.code, "LEDGER_TRANSACTION_NOT_FOUND");
    assert.deepEqual(await balances(s, a.key, mine.wallet), {
      posted: "500",
      pending: "0",
      available: "500",
    });
    assert.deepEqual(await balances(s, b.key, theirs.wallet), {
      posted: "500",
      pending: "-5",
      available: "495",
    });
  });

  it("GET /v1/ledger/transfers/{id}: your transfer as post/void show it, its status following them; another's, a payment's or an unknown id 404; POST …/batch still the batch", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const mine = await funded(s, a.key, 500);
    const theirs = await funded(s, b.key, 500);
    const body = {
      debitAccountId: mine.wallet,
      creditAccountId: mine.source,
      amountMinor: "40",
      currency: "USD",
    };
    const hold = await s.call(
      "POST",
      "/v1/ledger/transfers",
      a.key,
      { ...body, pending: true },
      fresh("hold"),
    );
    assert.equal(hold.status, 201, JSON.stringify(hold.body));
    const path = `/v1/ledger/transfers/${hold.body.transfer.id}`;
    const read = await s.call("GET", path, a.key);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.deepEqual(read.body, hold.body.transfer);
    const posted = await s.call("POST", `${path}/post`, a.key);
    assert.equal(posted.status, 200);
    const after = await s.call("GET", path, a.key);
    assert.equal(after.body.status, "posted");
    assert.deepEqual(after.body, posted.body);
    // Theirs, a payment's own ledger transaction, an unknown id: the same 404.
    const theirHold = await s.call(
      "POST",
      "/v1/ledger/transfers",
      b.key,
      { debitAccountId: theirs.wallet, creditAccountId: theirs.source, amountMinor: 5, currency: "USD" },
      fresh("theirs"),
    );
    const payments = await s.db.transaction((tx) => ensureMerchantAccounts(tx, a.id, "USD"));
    const paymentTransfer = await s.ledger.transfer({
      idemKey: `pay:${fresh("p")}:hold`,
      from: payments.customer_funds,
      to: payments.merchant_pending,
      amount: 7n,
      currency: "USD",
      pending: true,
    });
    for (const id of [theirHold.body.transfer.id, String(paymentTransfer.transaction.id), "999999999999"]) {
      const res = await s.call("GET", `/v1/ledger/transfers/${id}`, a.key);
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.code, "LEDGER_TRANSACTION_NOT_FOUND");
    }
    // A segment that is not an id matches no transfer route: 404; `batch` is the batch resource's 405.
    for (const id of ["abc", "0", "1234567890123456789"]) {
      const res = await s.call("GET", `/v1/ledger/transfers/${id}`, a.key);
      assert.equal(res.status, 404, JSON.stringify(res.body));
    }
    const getBatch = await s.service.app.inject({
      method: "GET",
      url: "/v1/ledger/transfers/batch",
      headers: { authorization: `Bearer ${a.key}` },
    });
    assert.equal(getBatch.statusCode, 405, getBatch.body);
    assert.equal(getBatch.headers.allow, "POST");
    // The batch route beside it still answers POST.
    const batch = await s.call("POST", "/v1/ledger/transfers/batch", a.key, {
      transfers: [{ ...body, idempotencyKey: fresh("batch") }],
    });
    assert.equal(batch.status, 200, JSON.stringify(batch.body));
    assert.equal(batch.body.results[0].result, "ok");
  });

  it("bad input is 400 naming the field, and writes nothing", async (s) => {
    const m = await s.merchant("m");
    const { source, wallet } = await funded(s, m.key, 100);
    const body = { debitAccountId: wallet, creditAccountId: source, amountMinor: 1, currency: "USD" };
    const cases: [Record<string, unknown>, string][] = [
      [{ ...body, currency: "usd" }, "/body/currency"],
      [{ ...body, currency: "XAU" }, "/body/currency"],
      [{ ...body, currency: "XYZ" }, "/body/currency"],
      [{ ...body, amountMinor: 0 }, "/body/amountMinor"],
      [{ ...body, amountMinor: "1000000000000001" }, "/body/amountMinor"],
      [{ ...body, amountMinor: 1.5 }, "/body/amountMinor"],
      [{ ...body, debitAccountId: 7 }, "/body/debitAccountId"],
      [{ ...body, debitAccountId: "0" }, "/body/debitAccountId"],
      [{ ...body, creditAccountId: wallet }, "/body/creditAccountId"],
      [{ ...body, pending: "true" }, "/body/pending"],
      [{ ...body, timeoutS: 60 }, "/body/timeoutS"],
      [{ ...body, pending: true, timeoutS: 0 }, "/body/timeoutS"],
      [{ ...body, metadata: "x" }, "/body/metadata"],
      [{ ...body, metadata: { big: "x".repeat(5_000) } }, "/body/metadata"],
      [{ ...body, currency: undefined }, "/body/currency"],
    ];
    for (const [bad, field] of cases)
      assertNames(await s.call("POST", "/v1/ledger/transfers", m.key, bad, fresh("bad")), field);
    for (const [bad, field] of [
      [{ currency: "BRL", noOverdraft: "yes" }, "/body/noOverdraft"],
      [{ currency: "XAU" }, "/body/currency"],
      [{ currency: "BRL", metadata: [1] }, "/body/metadata"],
    ] as const)
      assertNames(await s.call("POST", "/v1/ledger/accounts", m.key, bad, fresh("bad")), field);
    const item = { ...body, idempotencyKey: "k" };
    assertNames(
      await s.call("POST", "/v1/ledger/transfers/batch", m.key, {
        transfers: [item, { ...item, amountMinor: "0" }],
      }),
      "/body/transfers/1/amountMinor",
    );
    assertNames(
      await s.call("POST", "/v1/ledger/transfers/batch", m.key, {
        transfers: [item, { ...item, currency: "XAU" }],
      }),
      "/body/transfers/1/currency",
    );
    assertNames(
      await s.call("POST", "/v1/ledger/transfers/batch", m.key, { transfers: [] }),
      "/body/transfers",
    );
    const tooMany = Array.from({ length: 1_001 }, (_, i) => ({ ...item, idempotencyKey: `k${i}` }));
    assertNames(
      await s.call("POST", "/v1/ledger/transfers/batch", m.key, { transfers: tooMany }),
      "/body/transfers",
    );
    assert.deepEqual(await balances(s, m.key, wallet), { posted: "100", pending: "0", available: "100" });
  });

  it("batch: a result per transfer; a linked chain with one failure fails whole, its neighbours commit; a retry answers exists", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const { source, wallet } = await funded(s, a.key, 100);
    const other = await open(s, a.key, { currency: "USD" });
    const foreign = await open(s, b.key, { currency: "USD" });
    const t = (key: string, amount: number, extra: Record<string, unknown> = {}) => ({
      idempotencyKey: key,
      debitAccountId: wallet,
      creditAccountId: other,
      amountMinor: amount,
      currency: "USD",
      ...extra,
    });
    const batch = {
      transfers: [
        t("b-1", 10), // ok
        t("b-2", 30, { linked: true }), // chain 1: fine alone, fails with its chain
        t("b-3", 80, { linked: true }), // 10 + 30 + 80 > 100: exceeds_credits
        t("b-4", 1), // closes chain 1
        t("b-5", 20), // ok: chain 1's effects were undone
        t("b-6", 5, { linked: true }), // chain 2: a foreign account fails it
        t("b-7", 5, { creditAccountId: foreign }),
        t("b-8", 1, { pending: true, timeoutS: 60 }), // ok
      ],
    };
    const res = await s.call("POST", "/v1/ledger/transfers/batch", a.key, batch);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      res.body.results.map((r: { result: string }) => r.result),
      [
        "ok",
        "linked_event_failed",
        "exceeds_credits",
        "linked_event_failed",
        "ok",
        "linked_event_failed",
        "account_not_found",
        "ok",
      ],
    );
    assert.deepEqual(res.body.results[2].accountIds, [wallet]);
    assert.equal(res.body.results[6].accountId, foreign);
    assert.equal(res.body.results[7].transfer.status, "pending");
    assert.deepEqual(await balances(s, a.key, wallet), { posted: "70", pending: "-1", available: "69" });
    assert.deepEqual(await balances(s, a.key, other), { posted: "30", pending: "1", available: "30" });
    assert.equal((await s.call("GET", `/v1/ledger/accounts/${foreign}`, b.key)).body.balances.posted, "0");
    assert.equal((await balances(s, a.key, source)).posted, "-100");
    // The same batch again: what was written answers exists with the same transfer; nothing moves twice.
    const again = await s.call("POST", "/v1/ledger/transfers/batch", a.key, batch);
    const codes = again.body.results.map((r: { result: string }) => r.result);
    assert.deepEqual([codes[0], codes[4], codes[7]], ["exists", "exists", "exists"]);
    assert.deepEqual(again.body.results[0].transfer, res.body.results[0].transfer);
    assert.deepEqual(await balances(s, a.key, wallet), { posted: "70", pending: "-1", available: "69" });
  });
});

test("a full group-commit queue is a clear 503 GROUP_COMMIT_QUEUE_FULL, never an unbounded wait; nothing of it is written", async (t) => {
  if (engineFree(t)) return;
  const db = await openPgliteMemory();
  // One lane, one waiting transfer at most, held up to 2 s for company (a group of 2 never fills).
  const ledger = new LedgerRepository(db, {
    groupCommit: { lanes: 1, maxPending: 1, maxBatch: 2, maxWaitMs: 2_000 },
  });
  const s = await apiOf({ ...subjectOf(db), ledger });
  try {
    const m = await s.merchant("m");
    const source = await open(s, m.key, { currency: "USD" });
    const target = await open(s, m.key, { currency: "USD" });
    const body = { debitAccountId: source, creditAccountId: target, amountMinor: 1, currency: "USD" };
    // The one place in the queue, taken through the same path the route uses.
    const waiting = s.call("POST", "/v1/ledger/transfers", m.key, body, fresh("q"));
    const deadline = Date.now() + 1_500;
    while (ledger.groupCommitStats!.items === 0 && Date.now() < deadline) {
      const res = await s.call("POST", "/v1/ledger/transfers", m.key, body, fresh("q"));
      if (res.status === 503) {
        assert.equal(res.body.code, "GROUP_COMMIT_QUEUE_FULL");
        assert.equal((await waiting).status, 201);
        assert.equal((await balances(s, m.key, target)).posted, "1");
        return;
      }
      assert.equal(res.status, 201);
    }
    assert.fail(`no request found the queue full: ${JSON.stringify(ledger.groupCommitStats)}`);
  } finally {
    await s.service.close();
    await ledger.drain();
    await db.close();
  }
});
