/**
 * The composition root end to end on embedded PGlite in a temporary CASEBOOK_DATA: it listens
 * on a free port, answers the ops routes, documents its routes, bootstraps a demo merchant
 * whose printed key works, keeps data across a restart, and closes cleanly (acquirer too).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ConfigError } from "@casebook/kit/config";
import { ACQUIRER_URL_REQUIRED } from "../src/config.ts";
import { main } from "../src/main.ts";

let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-main-"));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function envFor(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // No DATABASE_URL / ACQUIRER_URL from the outer environment: this test is about the embedded defaults.
  return { PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent", ...extra };
}

test("main() on PGlite: ops routes, OpenAPI, a working bootstrap key, a clean close", async () => {
  const running = await main(envFor(dataDir));
  let closed = false;
  try {
    assert.equal(running.db.engine, "pglite");
    assert.deepEqual(await (await fetch(`${running.url}/healthz`)).json(), { status: "ok" });
    const ready = await fetch(`${running.url}/readyz`);
    assert.equal(ready.status, 200);
    const readiness = (await ready.json()) as { checks: Record<string, { status: string }> };
    assert.equal(readiness.checks.database!.status, "ok");
    const openapi = (await (await fetch(`${running.url}/openapi.json`)).json()) as { paths: object };
    const paths = Object.keys(openapi.paths);
    const documented = [
      "/v1/accounts",
      "/v1/accounts/{id}",
      "/v1/accounts/{id}/transactions",
      "/v1/payments",
    ];
    for (const path of documented) {
      assert.ok(paths.includes(path), `${path} in /openapi.json`);
    }
    assert.equal(running.bootstrap?.merchantId, "demo");
    const auth = { authorization: `Bearer ${running.bootstrap!.apiKey}` };
    const accounts = await fetch(`${running.url}/v1/accounts`, { headers: auth });
    assert.equal(accounts.status, 200);
    assert.deepEqual(await accounts.json(), { items: [] });
    assert.equal((await fetch(`${running.url}/v1/accounts`)).status, 401);
    assert.equal((await fetch(`${running.acquirerUrl}/healthz`)).status, 200, "in-process acquirer up");
    await running.close();
    closed = true;
    await assert.rejects(fetch(`${running.url}/healthz`), "the service no longer listens");
    await assert.rejects(fetch(`${running.acquirerUrl}/healthz`), "the acquirer closed with it");
  } finally {
    if (!closed) await running.close();
  }
});

test("a payment through the whole service lands in the merchant's accounts", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-e2e-"));
  const running = await main(envFor(dir));
  try {
    const auth = { authorization: `Bearer ${running.bootstrap!.apiKey}` };
    const paid = await fetch(`${running.url}/v1/payments`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": "main-test-1" },
      body: JSON.stringify({ amountMinor: "1250", currency: "USD", cardToken: "tok_visa", capture: true }),
    });
    assert.ok([201, 202].includes(paid.status), `POST /v1/payments answered ${paid.status}`);
    const accounts = (await (await fetch(`${running.url}/v1/accounts`, { headers: auth })).json()) as {
      items: { currency: string; role: string }[];
    };
    assert.deepEqual(
      accounts.items.map((a) => `${a.currency}:${a.role}`),
      ["USD:customer_funds", "USD:merchant_available", "USD:merchant_pending"],
      "the first payment provisioned the merchant's USD accounts",
    );
    // PY-11: the finished saga's event went through the outbox and the relay published it.
    const deadline = Date.now() + 10_000;
    let published = 0n;
    while (published < 1n && Date.now() < deadline) {
      const { rows } = await running.db.query<{ n: bigint }>(
        "SELECT coalesce(sum(published_seq), 0)::int8 AS n FROM outbox_streams",
      );
      published = rows[0]!.n;
      if (published < 1n) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(published >= 1n, "the payment's final event was published by the relay");
  } finally {
    await running.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a restart on the same data keeps the demo merchant and its key, and prints no new key", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-restart-"));
  try {
    const first = await main(envFor(dir));
    const key = first.bootstrap!.apiKey;
    await first.close();
    const second = await main(envFor(dir));
    try {
      assert.equal(second.bootstrap, undefined);
      const res = await fetch(`${second.url}/v1/accounts`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(res.status, 200);
    } finally {
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("PAYMENTS_BOOTSTRAP_MERCHANT names the merchant, or `off` creates none", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-bootstrap-"));
  try {
    const named = await main(envFor(dir, { PAYMENTS_BOOTSTRAP_MERCHANT: "shop_1" }));
    assert.equal(named.bootstrap?.merchantId, "shop_1");
    await named.close();
    const off = await main(envFor(dir, { PAYMENTS_BOOTSTRAP_MERCHANT: "off" }));
    assert.equal(off.bootstrap, undefined);
    await off.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a bad setting fails the start with one message naming it", async () => {
  await assert.rejects(
    main(envFor(dataDir, { PORT: "http", PAYMENTS_BOOTSTRAP_MERCHANT: "a:b" })),
    (err: unknown) =>
      err instanceof ConfigError &&
      /PORT/.test(err.message) &&
      /PAYMENTS_BOOTSTRAP_MERCHANT/.test(err.message),
  );
});

test("DATABASE_URL without ACQUIRER_URL is refused: each replica would run its own simulator", async () => {
  // Nothing listens on port 1: the refusal comes before any connection is tried.
  const env = envFor(dataDir, { DATABASE_URL: "postgres://postgres@127.0.0.1:1/test" });
  await assert.rejects(
    main(env),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.problems.length === 1 &&
      err.problems[0]!.message === ACQUIRER_URL_REQUIRED &&
      /npx casebook payments acquirer-sim/.test(err.message),
  );
});
