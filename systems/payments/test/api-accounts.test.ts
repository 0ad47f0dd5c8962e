/**
 * The account API through HTTP (fastify inject), on PGlite and PostgreSQL: 401 problem+json
 * without or with a bad key, 404 (never 403) for another merchant's account, balances per
 * account (posted / pending / available) and cursor pagination of an account's transactions.
 */
import assert from "node:assert/strict";
import type { Service } from "@casebook/infra/http/service";
import { type Backend, contractSuite } from "@casebook/lab/contract-suite";
import { ensureMerchantAccounts, type MerchantAccounts } from "../src/store/merchant-accounts.ts";
import { merchantApiService } from "./merchant-api-service.ts";
import { type MerchantSubject, merchantBackends } from "./merchant-backends.ts";

/** A parsed response body: tests read arbitrary JSON shapes and assert them field by field. */
// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by the assertions themselves
type Json = any;

interface Reply {
  status: number;
  headers: Record<string, unknown>;
  body: Json;
}

interface ApiSubject extends MerchantSubject {
  service: Service;
  get(path: string, key?: string): Promise<Reply>;
  /** A merchant with USD accounts and its API key. */
  merchant(label: string): Promise<{ id: string; key: string; usd: MerchantAccounts }>;
}

async function apiOf(subject: MerchantSubject): Promise<ApiSubject> {
  const service = await merchantApiService(subject);
  return {
    ...subject,
    service,
    async get(url, key) {
      const headers = key === undefined ? {} : { authorization: `Bearer ${key}` };
      const res = await service.app.inject({ method: "GET", url, headers });
      return { status: res.statusCode, headers: res.headers, body: res.json() };
    },
    async merchant(label) {
      const { merchant, apiKey } = await subject.merchants.create({ id: subject.id(label), name: label });
      const usd = await subject.db.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, "USD"));
      return { id: merchant.id, key: apiKey.key, usd };
    },
  };
}

const apiBackends: Backend<ApiSubject>[] = merchantBackends.map((backend) => ({
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
        await opened.close();
      },
    };
  },
}));

function assertProblem(res: Reply, status: number, code: string) {
  assert.equal(res.status, status);
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  assert.equal(res.body.code, code);
}

contractSuite("account API", apiBackends, (it) => {
  it("no Authorization header: 401 AUTH_MISSING problem+json with WWW-Authenticate", async (s) => {
    const res = await s.get("/v1/accounts");
    assertProblem(res, 401, "AUTH_MISSING");
    assert.match(String(res.headers["www-authenticate"]), /^Bearer /);
    assertProblem(await s.get("/v1/accounts/1/transactions"), 401, "AUTH_MISSING");
  });

  it("a wrong, malformed, non-Bearer or rotated-out key: 401 AUTH_INVALID / AUTH_MISSING", async (s) => {
    const m = await s.merchant("m");
    const wrong = `${m.key.slice(0, -2)}${m.key.endsWith("AA") ? "BB" : "AA"}`;
    for (const key of [wrong, "sk_nope", "x".repeat(300)]) {
      const res = await s.get("/v1/accounts", key);
      assertProblem(res, 401, "AUTH_INVALID");
      assert.match(String(res.headers["www-authenticate"]), /error="invalid_token"/);
    }
    const basic = await s.service.app.inject({
      url: "/v1/accounts",
      headers: { authorization: `Basic ${m.key}` },
    });
    assert.equal(basic.json().code, "AUTH_MISSING");
    await s.merchants.rotateKey(m.id);
    assertProblem(await s.get("/v1/accounts", m.key), 401, "AUTH_INVALID");
  });

  it("the scheme is case-insensitive (RFC 9110): `bearer <key>` authenticates", async (s) => {
    const m = await s.merchant("m");
    const res = await s.service.app.inject({
      url: "/v1/accounts",
      headers: { authorization: `bearer ${m.key}` },
    });
    assert.equal(res.statusCode, 200);
  });

  it("GET /v1/accounts lists only the caller's accounts, three per currency used", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const res = await s.get("/v1/accounts", a.key);
    assert.equal(res.status, 200);
    assert.deepEqual(
      res.body.items.map((item: { id: string; role: string }) => [item.id, item.role]).sort(),
      Object.entries(a.usd)
        .map(([role, id]) => [String(id), role])
        .sort(),
    );
    const theirs = new Set(Object.values(b.usd).map(String));
    assert.ok(res.body.items.every((item: { id: string }) => !theirs.has(item.id)));
  });

  it("another merchant's account answers 404 exactly like one that does not exist (never 403)", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const foreign = String(b.usd.merchant_pending);
    for (const path of [`/v1/accounts/${foreign}`, `/v1/accounts/${foreign}/transactions`]) {
      const res = await s.get(path, a.key);
      assertProblem(res, 404, "PAYMENTS_ACCOUNT_NOT_FOUND");
      const missing = await s.get(path.replace(foreign, "9223372036854775807"), a.key);
      assertProblem(missing, 404, "PAYMENTS_ACCOUNT_NOT_FOUND");
      assert.deepEqual(Object.keys(res.body).sort(), Object.keys(missing.body).sort());
    }
    assert.equal((await s.get(`/v1/accounts/${foreign}`, b.key)).status, 200, "its owner sees it");
    assertProblem(await s.get("/v1/accounts/9999999999999999999", a.key), 404, "PAYMENTS_ACCOUNT_NOT_FOUND");
  });

  it("PY-16 GET /v1/accounts/{id} shows posted, pending and available as integer strings", async (s) => {
    const m = await s.merchant("m");
    const key = s.id("t");
    const move = { from: m.usd.customer_funds, to: m.usd.merchant_pending, currency: "USD" };
    await s.ledger.transfer({ ...move, idemKey: `${key}:captured`, amount: 10_000n });
    const hold = await s.ledger.transfer({ ...move, idemKey: `${key}:held`, amount: 2_500n, pending: true });
    const before = await s.get(`/v1/accounts/${m.usd.merchant_pending}`, m.key);
    assert.equal(before.status, 200);
    assert.equal(before.body.currency, "USD");
    assert.equal(before.body.role, "merchant_pending");
    assert.deepEqual(before.body.balances, { posted: "10000", pending: "2500", available: "10000" });
    const source = await s.get(`/v1/accounts/${m.usd.customer_funds}`, m.key);
    assert.deepEqual(source.body.balances, { posted: "-10000", pending: "-2500", available: "-12500" });
    await s.ledger.post(hold.transaction.id);
    const after = await s.get(`/v1/accounts/${m.usd.merchant_pending}`, m.key);
    assert.deepEqual(after.body.balances, { posted: "12500", pending: "0", available: "12500" });
  });

  it("transactions page newest first with a cursor until nextCursor is null; every one exactly once", async (s) => {
    const m = await s.merchant("m");
    const key = s.id("t");
    const ids: string[] = [];
    for (let i = 1; i <= 5; i++) {
      const move = { from: m.usd.customer_funds, to: m.usd.merchant_pending, currency: "USD" };
      const result = await s.ledger.transfer({ ...move, idemKey: `${key}:${i}`, amount: BigInt(i * 100) });
      ids.push(String(result.transaction.id));
    }
    const seen: string[] = [];
    let path = `/v1/accounts/${m.usd.merchant_pending}/transactions?limit=2`;
    const pageSizes: number[] = [];
    for (let page = 0; page < 10; page++) {
      const res = await s.get(path, m.key);
      assert.equal(res.status, 200);
      pageSizes.push(res.body.items.length);
      seen.push(...res.body.items.map((item: { id: string }) => item.id));
      if (res.body.nextCursor === null) break;
      path = `/v1/accounts/${m.usd.merchant_pending}/transactions?limit=2&cursor=${res.body.nextCursor}`;
    }
    assert.deepEqual(pageSizes, [2, 2, 1]);
    assert.deepEqual(seen, ids.toReversed());
    const first = (await s.get(`/v1/accounts/${m.usd.merchant_pending}/transactions?limit=1`, m.key)).body;
    assert.equal(first.items[0].status, "posted");
    assert.deepEqual(
      first.items[0].entries.map((e: { direction: string; amount: string }) => [e.direction, e.amount]),
      [
        ["D", "500"],
        ["C", "500"],
      ],
    );
  });

  it("a transaction shared with another merchant shows only the caller's legs", async (s) => {
    const a = await s.merchant("a");
    const b = await s.merchant("b");
    const fund = { from: a.usd.customer_funds, to: a.usd.merchant_pending, currency: "USD" };
    await s.ledger.transfer({ ...fund, idemKey: s.id("fund"), amount: 700n });
    await s.ledger.transfer({
      idemKey: s.id("shared"),
      from: a.usd.merchant_pending,
      to: b.usd.merchant_pending,
      amount: 300n,
      currency: "USD",
    });
    const page = (await s.get(`/v1/accounts/${a.usd.merchant_pending}/transactions?limit=1`, a.key)).body;
    assert.deepEqual(
      page.items[0].entries.map((e: { accountId: string }) => e.accountId),
      [String(a.usd.merchant_pending)],
    );
  });

  it("bad paging input is a 400 naming it: limit out of range, a cursor we did not make", async (s) => {
    const m = await s.merchant("m");
    const base = `/v1/accounts/${m.usd.merchant_pending}/transactions`;
    const tooMany = await s.get(`${base}?limit=101`, m.key);
    assertProblem(tooMany, 400, "REQUEST_INVALID");
    assert.equal(tooMany.body.errors[0].field, "/querystring/limit");
    assertProblem(await s.get(`${base}?cursor=bm90LWEtY3Vyc29y`, m.key), 400, "LEDGER_CURSOR_INVALID");
    assertProblem(await s.get("/v1/accounts/abc", m.key), 400, "REQUEST_INVALID");
  });
});
