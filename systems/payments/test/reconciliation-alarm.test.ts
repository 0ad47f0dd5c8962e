/**
 * PY-17 "reconciliation is the last-line alarm", on the running service: `main()`'s daily job
 * reconciles yesterday's D+1 file from the acquirer on its own, and a difference between the
 * ledger and the acquirer's settlement shows in /metrics (payments_reconciliation_open_exceptions,
 * what an alert watches) and as an open exception in the API — without anyone running a tool.
 *
 * The simulator runs "yesterday" (its own manual clock) while the payments are made, so its file
 * for yesterday lists them; then its clock passes midnight, the file is out and a difference is
 * injected into it, and the service starts again with its daily check due at once (a file row
 * matches a booking of any day, so the service's real-time rows match it).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { engineFree } from "@casebook/lab/test-engines";
import { main } from "../src/main.ts";
import { createAcquirerSim } from "../src/sim/acquirer-sim.ts";
import { DAY_MS } from "./acquirer-sim-fixture.ts";
import { paymentBody, waitFor } from "./payment-fixture.ts";

const OPEN_EXCEPTIONS = "payments_reconciliation_open_exceptions";

async function openExceptions(url: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${OPEN_EXCEPTIONS} `));
  return line === undefined ? undefined : Number(line.slice(OPEN_EXCEPTIONS.length + 1));
}

test("PY-17 reconciliation is the last-line alarm: the running service's daily job finds a settlement difference and /metrics reports it", async (t) => {
  if (engineFree(t)) return;
  const yesterday = new Date(Date.now() - DAY_MS).toISOString().slice(0, 10);
  const simClock = new ManualClock(Date.parse(`${yesterday}T12:00:00Z`));
  const sim = createAcquirerSim({
    clock: simClock,
    rng: seededRandom("alarm"),
    log: { level: "silent" },
    defaultMetrics: false,
  });
  const { url: acquirerUrl } = await sim.listen({ port: 0, host: "127.0.0.1" });
  t.after(() => sim.close());
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-payments-alarm-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const env = { PORT: "0", CASEBOOK_DATA: dataDir, LOG_LEVEL: "silent", ACQUIRER_URL: acquirerUrl };
  // Today: payments, the daily job not due (yesterday's file is not out yet anyway).
  const first = await main(env, { reconciliation: { firstCheckMs: 3_600_000 } });
  let firstOpen = true;
  t.after(() => (firstOpen ? first.close() : undefined)); // a failed assertion must not leave it running
  const auth = { authorization: `Bearer ${first.bootstrap!.apiKey}` };
  for (const key of ["alarm-1", "alarm-2"]) {
    const res = await fetch(`${first.url}/v1/payments`, {
      method: "POST",
      headers: { ...auth, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(paymentBody()),
    });
    assert.equal(res.status, 201, await res.text());
  }
  assert.equal(await openExceptions(first.url), 0, "nothing to report before the file is out");
  await first.close();
  firstOpen = false;
  simClock.advance(DAY_MS); // the acquirer's day is over: yesterday's file is published
  const injected = await fetch(`${acquirerUrl}/admin/settlements/${yesterday}/differences`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ changeAmounts: 1 }),
  });
  assert.equal(injected.status, 200, await injected.text());
  // The service again, its daily job checking at once: nobody runs a tool.
  const running = await main(env, { reconciliation: { firstCheckMs: 100, checkEveryMs: 200 } });
  t.after(() => running.close());
  // The gauge caches its count 5 s.
  await waitFor(async () => ((await openExceptions(running.url)) === 1 ? true : undefined), 60_000, 250);
  const listed = await fetch(`${running.url}/v1/reconciliation/exceptions`, { headers: auth });
  const body = (await listed.json()) as { items: { kind: string; settlementDate: string }[] };
  assert.deepEqual(
    body.items.map((e) => [e.kind, e.settlementDate]),
    [["amount_mismatch", yesterday]],
  );
});
