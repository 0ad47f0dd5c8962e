/**
 * PY-04's TTL in a running service: `main()` runs the idempotency pruner, so keys older than the
 * 24 h retention leave the table while younger ones (and a live payment's) stay; a prune round is
 * bounded (maxBatch × maxBatchesPerRound keys) and a full round is followed by the next at once.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { Queryable } from "@casebook/infra/sql/sql";
import { DEFAULT_RETENTION_S } from "@casebook/kit/idempotency";
import { seededRandom } from "@casebook/kit/random";
import { engineFree } from "@casebook/lab/test-engines";
import { main } from "../src/main.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { IdempotencyPruner } from "../src/workers/idempotency-pruner.ts";
import { openTestDb, paymentBody, waitFor } from "./payment-fixture.ts";

const HOUR_MS = 3_600_000;

/** Claims `count` keys of merchant `scope` stamped `ageMs` ago, as an abandoned request leaves them. */
async function claimsAged(q: Queryable, scope: string, prefix: string, count: number, ageMs: number) {
  const at = new Date(Date.now() - ageMs);
  for (let i = 0; i < count; i++) {
    await q.query(
      `INSERT INTO idempotency_keys (merchant_id, key, request_method, request_path, body_sha256, status,
         recovery_point, generation, locked_at, created_at)
       VALUES ($1, $2, 'POST', '/v1/payments', $3, 'in_progress', 'started', 1, $4, $4)`,
      [scope, `${prefix}-${i}`, "0".repeat(64), at],
    );
  }
}

async function keysOf(q: Queryable, scope: string): Promise<string[]> {
  const { rows } = await q.query<{ key: string }>(
    "SELECT key FROM idempotency_keys WHERE merchant_id = $1 ORDER BY key",
    [scope],
  );
  return rows.map((r) => r.key);
}

test("PY-04 the running service prunes keys past the 24 h retention; younger keys and a live payment's stay", async (t) => {
  if (engineFree(t)) return;
  assert.equal(DEFAULT_RETENTION_S, 86_400, "the retention main() runs with is 24 h");
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-prune-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  // Small batches, so the 7 old keys take several rounds: the loop goes on while rounds come back full.
  const running = await main(
    { PORT: "0", CASEBOOK_DATA: dataDir, LOG_LEVEL: "silent" },
    { pruner: { intervalMs: 50, maxBatch: 2, maxBatchesPerRound: 2 } },
  );
  t.after(() => running.close());
  const merchant = running.bootstrap!.merchantId;
  const paid = await fetch(`${running.url}/v1/payments`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${running.bootstrap!.apiKey}`,
      "content-type": "application/json",
      "idempotency-key": "live-1",
    },
    body: JSON.stringify(paymentBody()),
  });
  assert.equal(paid.status, 201, await paid.text());
  await claimsAged(running.db, merchant, "old", 7, 25 * HOUR_MS);
  await claimsAged(running.db, merchant, "young", 2, 23 * HOUR_MS);
  await waitFor(
    async () => ((await keysOf(running.db, merchant)).some((k) => k.startsWith("old-")) ? undefined : true),
    30_000,
  );
  assert.deepEqual(await keysOf(running.db, merchant), ["live-1", "young-0", "young-1"]);
});

test("PY-04 a prune round deletes at most maxBatch × maxBatchesPerRound keys and says when more are due", async (t) => {
  if (engineFree(t)) return;
  const { db } = await openTestDb(t);
  const store = paymentsIdempotencyStore(db);
  await claimsAged(db, "m1", "old", 7, 25 * HOUR_MS);
  await claimsAged(db, "m1", "young", 1, 1 * HOUR_MS);
  const pruner = new IdempotencyPruner(store, {
    maxBatch: 2,
    maxBatchesPerRound: 2,
    random: seededRandom("pruner"),
    onError: (error) => assert.fail(String(error)),
  });
  assert.deepEqual(await pruner.runOnce(), { deleted: 4, more: true });
  assert.deepEqual(await pruner.runOnce(), { deleted: 3, more: false });
  assert.deepEqual(await pruner.runOnce(), { deleted: 0, more: false });
  assert.deepEqual(await keysOf(db, "m1"), ["young-0"]);
  assert.throws(
    () => new IdempotencyPruner(store, { maxBatch: 0, random: seededRandom("p"), onError: () => {} }),
    /maxBatch/,
  );
});
