/**
 * The keys `casebook up` grants to the systems that call payments (PAYMENTS_CALLER_API_KEYS,
 * issue 17): payments registers each at start for a merchant named after its caller, so the
 * caller's first request authenticates; a restart with the same keys finds them in place, and a
 * key already registered for another merchant fails the start instead of moving.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { ConfigError } from "@casebook/kit/config";
import { main } from "../src/main.ts";

function envFor(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent", ...extra };
}

async function status(url: string, key: string): Promise<number> {
  const res = await fetch(`${url}/v1/accounts`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

test("a granted caller key answers at once, and again after a restart with the same key", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-callers-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const flashSale = apiKeyScheme("sk").issue(randomBytes).key;
  const other = apiKeyScheme("sk").issue(randomBytes).key;
  const granted = { PAYMENTS_CALLER_API_KEYS: `flash-sale=${flashSale},metrics=${other}` };

  const first = await main(envFor(dir, granted));
  try {
    assert.equal(await status(first.url, flashSale), 200);
    assert.equal(await status(first.url, other), 200);
    assert.equal(await status(first.url, apiKeyScheme("sk").issue(randomBytes).key), 401, "an unknown key");
    assert.equal(first.bootstrap?.merchantId, "demo", "the demo merchant is still made beside them");
  } finally {
    await first.close();
  }

  const second = await main(envFor(dir, granted));
  try {
    assert.equal(await status(second.url, flashSale), 200, "the same key after a restart");
    const { rows } = await second.db.query<{ id: string; keys: string }>(
      `SELECT m.id, count(k.prefix)::text AS keys FROM merchants m JOIN merchant_api_keys k ON k.merchant_id = m.id
        WHERE m.id IN ('flash-sale', 'metrics') GROUP BY m.id ORDER BY m.id`,
    );
    assert.deepEqual(
      rows,
      [
        { id: "flash-sale", keys: "1" },
        { id: "metrics", keys: "1" },
      ],
      "one merchant and one key per caller, not one more per start",
    );
  } finally {
    await second.close();
  }

  // The flash-sale key given as another caller's: refused, never moved to that merchant.
  await assert.rejects(
    main(envFor(dir, { PAYMENTS_CALLER_API_KEYS: `intruder=${flashSale}` })),
    /already registered/,
  );
});

test("a malformed PAYMENTS_CALLER_API_KEYS fails the start naming it", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-callers-bad-"));
  try {
    for (const value of ["flash-sale", "flash-sale=whk_0123456789abcdef_x", "=sk_0"]) {
      await assert.rejects(
        main(envFor(dir, { PAYMENTS_CALLER_API_KEYS: value })),
        (err: unknown) => err instanceof ConfigError && /PAYMENTS_CALLER_API_KEYS/.test(err.message),
      );
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
