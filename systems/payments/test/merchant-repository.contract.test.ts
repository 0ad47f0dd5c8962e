/** Merchants, API keys and per-merchant ledger accounts, on PGlite (memory) and PostgreSQL alike. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { contractSuite } from "@casebook/lab/contract-suite";
import { ledgerErrors, merchantErrors } from "../src/errors.ts";
import {
  ACCOUNT_ROLES,
  ensureMerchantAccounts,
  findMerchantAccount,
  listMerchantAccounts,
} from "../src/store/merchant-accounts.ts";
import { MAX_KEY_OVERLAP_MS, MerchantRepository } from "../src/store/merchant-repository.ts";
import { merchantBackends } from "./merchant-backends.ts";

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail("expected a rejection");
}

contractSuite("merchant repository", merchantBackends, (it) => {
  it("a new merchant's key authenticates as that merchant; only its hash and prefix are stored", async (s) => {
    const { merchant, apiKey } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    assert.equal(await s.merchants.authenticate(apiKey.key), merchant.id);
    assert.ok(apiKey.key.startsWith(`${apiKey.prefix}_`));
    const { rows } = await s.db.query<Record<string, unknown>>(
      "SELECT * FROM merchant_api_keys WHERE merchant_id = $1",
      [merchant.id],
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.key_hash, createHash("sha256").update(apiKey.key).digest("hex"));
    const secret = apiKey.key.slice(apiKey.prefix.length + 1);
    assert.ok(!JSON.stringify(rows[0]).includes(secret), "the secret part is never stored");
    assert.deepEqual(
      (await s.merchants.keys(merchant.id)).map((k) => k.prefix),
      [apiKey.prefix],
    );
  });

  it("a generated id is mer_ + 24 hex characters", async (s) => {
    const { merchant } = await s.merchants.create({ name: "Generated" });
    assert.match(merchant.id, /^mer_[0-9a-f]{24}$/);
  });

  it("wrong secret, unknown prefix, malformed or empty keys do not authenticate", async (s) => {
    const { apiKey } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    const last = apiKey.key.at(-1) === "A" ? "B" : "A";
    const wrongSecret = `${apiKey.key.slice(0, -1)}${last}`;
    const unknownPrefix = `sk_0000000000000000${apiKey.key.slice(apiKey.prefix.length)}`;
    for (const key of [wrongSecret, unknownPrefix, "sk_live_nope", "", `${apiKey.key}x`, apiKey.prefix]) {
      assert.equal(await s.merchants.authenticate(key), undefined, key);
    }
  });

  it("an id already taken is PAYMENTS_MERCHANT_EXISTS, createIfAbsent answers undefined", async (s) => {
    const id = s.id("m");
    await s.merchants.create({ id, name: "First" });
    const err = await rejection(s.merchants.create({ id, name: "Second" }));
    assert.ok(merchantErrors.is(err, "PAYMENTS_MERCHANT_EXISTS"));
    assert.equal(await s.merchants.createIfAbsent({ id, name: "Third" }), undefined);
    assert.equal((await s.merchants.get(id))?.name, "First");
  });

  it("an id with ':' (the acquirer key separator) or an empty name is PAYMENTS_MERCHANT_INVALID", async (s) => {
    for (const request of [
      { id: "a:b", name: "x" },
      { id: "", name: "x" },
      { id: s.id("m"), name: " " },
    ]) {
      const err = await rejection(s.merchants.create(request));
      assert.ok(merchantErrors.is(err, "PAYMENTS_MERCHANT_INVALID"), JSON.stringify(request));
    }
  });

  it("rotation with an overlap keeps the old key until the overlap ends; the new key works at once", async (s) => {
    const { merchant, apiKey: old } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    const fresh = await s.merchants.rotateKey(merchant.id, { overlapMs: 60_000 });
    assert.notEqual(fresh.prefix, old.prefix);
    assert.equal(await s.merchants.authenticate(fresh.key), merchant.id);
    s.clock.advance(59_999);
    assert.equal(await s.merchants.authenticate(old.key), merchant.id);
    s.clock.advance(1);
    assert.equal(await s.merchants.authenticate(old.key), undefined);
    assert.equal(await s.merchants.authenticate(fresh.key), merchant.id);
    const keys = await s.merchants.keys(merchant.id);
    assert.equal(keys.length, 2);
    assert.equal(keys.find((k) => k.prefix === fresh.prefix)?.expiresAt, null);
  });

  it("rotation without an overlap revokes every older key at once", async (s) => {
    const { merchant, apiKey: first } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    const second = await s.merchants.rotateKey(merchant.id, { overlapMs: 3_600_000 });
    const third = await s.merchants.rotateKey(merchant.id);
    assert.equal(await s.merchants.authenticate(first.key), undefined);
    assert.equal(await s.merchants.authenticate(second.key), undefined, "the overlap is cut short");
    assert.equal(await s.merchants.authenticate(third.key), merchant.id);
  });

  it("rotating an unknown merchant is NOT_FOUND; an overlap beyond a week is INVALID", async (s) => {
    const missing = await rejection(s.merchants.rotateKey(s.id("ghost")));
    assert.ok(merchantErrors.is(missing, "PAYMENTS_MERCHANT_NOT_FOUND"));
    const { merchant } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    for (const overlapMs of [-1, 1.5, MAX_KEY_OVERLAP_MS + 1]) {
      const err = await rejection(s.merchants.rotateKey(merchant.id, { overlapMs }));
      assert.ok(merchantErrors.is(err, "PAYMENTS_MERCHANT_INVALID"), String(overlapMs));
    }
  });

  it("a taken key prefix is retried a bounded number of times; nothing is half-written", async (s) => {
    const stuck = new MerchantRepository(s.db, {
      clock: s.clock,
      randomBytes: (size) => new Uint8Array(size),
    });
    // Every backend is a fresh schema: the all-zero prefix is free once, then taken.
    assert.ok(await stuck.createIfAbsent({ id: s.id("m"), name: "Zero" }));
    const secondId = s.id("m");
    await assert.rejects(stuck.create({ id: secondId, name: "Collides" }), /prefixes were all taken/);
    assert.equal(await s.merchants.get(secondId), undefined, "the merchant row rolled back with its key");
  });

  it("accounts are created on first use: three per currency, once, with their overdraft rules", async (s) => {
    const { merchant } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    const usd = await s.db.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, "USD"));
    const again = await s.db.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, "USD"));
    assert.deepEqual(again, usd);
    const brl = await s.db.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, "BRL"));
    assert.equal(new Set([...Object.values(usd), ...Object.values(brl)]).size, 6);
    const listed = await listMerchantAccounts(s.db, merchant.id);
    assert.deepEqual(
      listed.map((a) => [a.currency, a.role, a.noOverdraft]),
      [
        ["BRL", "customer_funds", false],
        ["BRL", "merchant_available", true],
        ["BRL", "merchant_pending", true],
        ["USD", "customer_funds", false],
        ["USD", "merchant_available", true],
        ["USD", "merchant_pending", true],
      ],
    );
    for (const role of ACCOUNT_ROLES) {
      assert.equal((await findMerchantAccount(s.db, merchant.id, usd[role]))?.role, role);
    }
  });

  it("accounts created in a transaction that rolls back do not exist", async (s) => {
    const { merchant } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    await assert.rejects(
      s.db.transaction(async (tx) => {
        await ensureMerchantAccounts(tx, merchant.id, "EUR");
        throw new Error("the payment failed");
      }),
      /the payment failed/,
    );
    assert.deepEqual(await listMerchantAccounts(s.db, merchant.id), []);
  });

  it("a malformed currency is LEDGER_TRANSFER_INVALID; another merchant's account is not found", async (s) => {
    const a = await s.merchants.create({ id: s.id("a"), name: "A" });
    const b = await s.merchants.create({ id: s.id("b"), name: "B" });
    const err = await rejection(s.db.transaction((tx) => ensureMerchantAccounts(tx, a.merchant.id, "usd")));
    assert.ok(ledgerErrors.is(err, "LEDGER_TRANSFER_INVALID"));
    const accounts = await s.db.transaction((tx) => ensureMerchantAccounts(tx, a.merchant.id, "USD"));
    assert.equal(await findMerchantAccount(s.db, b.merchant.id, accounts.merchant_pending), undefined);
  });

  it("balances equal the ledger's own: posted, pending and available", async (s) => {
    const { merchant } = await s.merchants.create({ id: s.id("m"), name: "Acme" });
    const acc = await s.db.transaction((tx) => ensureMerchantAccounts(tx, merchant.id, "USD"));
    const key = s.id("t");
    const move = { from: acc.customer_funds, to: acc.merchant_pending, currency: "USD" };
    await s.ledger.transfer({ ...move, idemKey: `${key}:1`, amount: 1_200n });
    await s.ledger.transfer({ ...move, idemKey: `${key}:2`, amount: 500n, pending: true });
    const views = await listMerchantAccounts(s.db, merchant.id);
    for (const view of views) {
      const balance = await s.ledger.balance(view.accountId);
      const { posted, pending, available } = balance;
      assert.deepEqual(view.balances, { posted, pending, available }, view.role);
    }
    const pendingView = views.find((v) => v.role === "merchant_pending")!;
    assert.deepEqual(pendingView.balances, { posted: 1_200n, pending: 500n, available: 1_200n });
  });
});
