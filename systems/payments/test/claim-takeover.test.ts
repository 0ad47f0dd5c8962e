/**
 * A retry after the process holding a payment's claims was SIGKILLed is taken over by another
 * process one short lease later (PAYMENTS_CLAIM_LEASE_MS, 5 s, renewed while the saga step runs),
 * not after the old 60 s: two service processes on one real PostgreSQL, process A's authorize
 * call held by the acquirer (latency), A killed, the same request retried through process B
 * until it has its final answer. The payment ends captured with ONE authorization at the
 * acquirer (no double charge), and B takes over only after A's lease ended: the lease bound is
 * the correctness property asserted; the takeover and completion times are measured and shown.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { systemClock } from "@casebook/kit/clock";
import { spawnChild } from "@casebook/lab/spawn-child";
import { requirePostgres } from "@casebook/lab/test-engines";
import { paymentAcquirerKey } from "../src/domain/derived-keys.ts";
import { MerchantRepository } from "../src/store/merchant-repository.ts";
import { DEFAULT_SAGA_LEASE_MS } from "../src/workers/saga-orchestrator.ts";
import { startAcquirer } from "./bank-workload-cluster.ts";
import { openTestDb } from "./payment-fixture.ts";

/** How long the acquirer holds process A's authorize call: longer than A lives. */
const HELD_CALL_MS = 8_000;
/** Bound on the whole retry loop through B (a failure, not a speed target). */
const RETRY_LOOP_MAX_MS = 60_000;
const RETRY_EVERY_MS = 100;

test("SIGKILL of the process holding a payment: a retry through another process takes over after one short lease, one authorization", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema } = await openTestDb(t, url);
  const merchants = new MerchantRepository(db, { clock: systemClock, randomBytes });
  const { apiKey } = await merchants.create({ id: "takeover", name: "claim takeover" });
  const acquirer = await startAcquirer({ ACQUIRER_SEED: "claim-takeover" });
  t.after(() => acquirer.stop());
  const env = {
    ...process.env,
    DATABASE_URL: url,
    PAYMENTS_DB_SCHEMA: schema,
    ACQUIRER_URL: acquirer.url,
    PAYMENTS_BOOTSTRAP_MERCHANT: "off",
    PAYMENTS_INLINE_DRIVE_MS: "1000",
    LOG_LEVEL: "silent",
  };
  const child = new URL("./claim-takeover-child.ts", import.meta.url);
  const a = await spawnChild(child, { env, test: t, readyTimeoutMs: 60_000 });
  const b = await spawnChild(child, { env, test: t, readyTimeoutMs: 60_000 });
  const urlOf = (c: typeof a) => (JSON.parse(c.readyLine) as { url: string }).url;
  const pay = (base: string) =>
    fetch(`${base}/v1/payments`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey.key}`,
        "content-type": "application/json",
        "idempotency-key": "takeover-1",
      },
      body: JSON.stringify({ amountMinor: "4200", currency: "USD", cardToken: "tok_visa", capture: true }),
    });

  await acquirer.behave({ latencyMs: HELD_CALL_MS });
  const first = await pay(urlOf(a));
  assert.equal(first.status, 202, "A answers pending: its authorize call is held at the acquirer");
  await first.body?.cancel();
  // A keeps renewing both claims while its call is held: let it renew past its first lease, read, kill A.
  await sleep(DEFAULT_SAGA_LEASE_MS * 0.7);
  const before = await db.query<{ locked_at: Date; lease_expires_at: Date; created_at: Date; step: string }>(
    `SELECT k.locked_at, p.lease_expires_at, p.created_at, p.step FROM idempotency_keys k
       JOIN payments p ON p.merchant_id = k.merchant_id AND p.idempotency_key = k.key
      WHERE k.key = 'takeover-1'`,
  );
  const readAtMs = Date.now();
  const held = before.rows[0]!;
  assert.equal(held.step, "authorize", "A's authorize call is still out");
  const sagaLeaseEndMs = held.lease_expires_at.getTime();
  const keyLeaseEndMs = held.locked_at.getTime() + DEFAULT_SAGA_LEASE_MS;
  assert.ok(
    sagaLeaseEndMs > held.created_at.getTime() + DEFAULT_SAGA_LEASE_MS,
    "A renewed the saga's lease past its first one while the call ran",
  );
  assert.ok(keyLeaseEndMs > held.created_at.getTime() + DEFAULT_SAGA_LEASE_MS, "and the key's claim with it");
  assert.ok(
    sagaLeaseEndMs - readAtMs <= DEFAULT_SAGA_LEASE_MS,
    `a short lease: it ends at most one lease from now (${sagaLeaseEndMs - readAtMs} ms)`,
  );
  // Both leases end at the earliest here; whichever B takes first (its worker the saga, its retry the key), it is later.
  const leaseEndMs = Math.min(sagaLeaseEndMs, keyLeaseEndMs);
  await a.kill("SIGKILL");
  const killedAtMs = Date.now();
  await acquirer.behave({ latencyMs: 0 });

  const statuses: number[] = [];
  const trace: string[] = [];
  let firstNot409AtMs: number | undefined;
  let final: { status: number; body: Record<string, unknown> } | undefined;
  while (Date.now() - killedAtMs < RETRY_LOOP_MAX_MS) {
    const res = await pay(urlOf(b));
    const body = (await res.json()) as Record<string, unknown>;
    statuses.push(res.status);
    trace.push(`${Date.now() - killedAtMs}ms ${res.status} ${String(body.code ?? body.status)}`);
    if (res.status !== 409 && firstNot409AtMs === undefined) firstNot409AtMs = Date.now();
    if (res.status === 201) {
      final = { status: res.status, body };
      break;
    }
    await sleep(RETRY_EVERY_MS);
  }
  const doneAtMs = Date.now();
  assert.ok(final, `B never answered 201 (statuses ${[...new Set(statuses)].join(",")})`);
  assert.equal(final.body.status, "captured");
  assert.ok(firstNot409AtMs !== undefined);
  assert.ok(statuses[0] === 409, "the first retry finds A's claim still leased (409 in progress)");
  assert.ok(
    firstNot409AtMs >= leaseEndMs,
    `B took over only after A's lease ended (${firstNot409AtMs - leaseEndMs} ms after; lease end at ${leaseEndMs - killedAtMs} ms): ${trace.filter((_, i) => i === 0 || trace[i - 1]!.split(" ")[1] !== trace[i]!.split(" ")[1]).join("; ")}`,
  );
  t.diagnostic(
    `lease ${DEFAULT_SAGA_LEASE_MS} ms, A's lease ended ${leaseEndMs - killedAtMs} ms after the kill: ` +
      `B answered ${firstNot409AtMs - killedAtMs} ms after the kill, ` +
      `final answer ${doneAtMs - killedAtMs} ms after the kill (${statuses.length} retries)`,
  );
  // A's held call reaches the acquirer's handler after its latency: still one authorization.
  await sleep(Math.max(0, killedAtMs + HELD_CALL_MS - Date.now()) + 500);
  const stats = await acquirer.stats();
  assert.equal(stats.authorizations, 1, "one authorization: no double charge");
  const key = paymentAcquirerKey("takeover", "takeover-1");
  const view = await acquirer.call("GET", `/v1/authorizations/by-key/${encodeURIComponent(key)}`);
  assert.equal(view.status, 200);
  assert.equal(
    (view.body as { status: string }).status,
    "captured",
    "the acquirer captured the one authorization",
  );
});
