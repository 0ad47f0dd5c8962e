/**
 * A delivery worker PROCESS for claim-race.test.ts, on the real PostgreSQL. It opens its
 * own pool on the test schema, says "ready" over IPC (lab spawnChild with `ipc`), and on "go" runs its mode:
 *
 * - `race`: claims batches of due deliveries until none is left; records each claim in
 *   `test_claims` (no unique constraint: a double claim would show as two rows), then
 *   "delivers" and settles them with one CAS batch; reports its counts and exits.
 * - `hold`: claims every due delivery with a short lease, records the claims, passes the
 *   re-check before sending (loadForSend), reports the leases — and then hangs, as a worker
 *   stuck mid-request does, until the parent SIGKILLs it.
 *
 * argv: <database url> <schema> <worker id> <race|hold> <leaseMs> <httpDeadlineMs>
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import { isRetryableTransactionError } from "@casebook/infra/sql/sql-state";
import { claimDue } from "../src/store/delivery-claims.ts";
import { recordAttempts } from "../src/store/delivery-results.ts";
import { loadForSend } from "../src/store/send-check.ts";

const [url, schema, worker, mode, leaseText, deadlineText] = process.argv.slice(2);
if (!url || !schema || !worker || (mode !== "race" && mode !== "hold") || !leaseText || !deadlineText) {
  throw new Error("usage: <url> <schema> <worker> <race|hold> <leaseMs> <httpDeadlineMs>");
}
const workerId: string = worker;
const leaseMs = Number(leaseText);
const httpDeadlineMs = Number(deadlineText);
/** Deliveries per claim in the race: small enough that four workers interleave many times. */
const RACE_BATCH = 50;
/** Bound on claim rounds: 10 000 deliveries need 200 rounds of 50 even for a lone worker. */
const MAX_ROUNDS = 1_000;

const db = await openDatabase({ system: "webhooks", url, schema, pool: { maxConnections: 2 } });
const send = (message: unknown) =>
  new Promise<void>((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );

async function recordClaims(claimed: { deliveryId: string; leaseVersion: bigint }[]): Promise<void> {
  await db.query(
    "INSERT INTO test_claims (delivery_id, worker_id, lease_version) SELECT d, $2, v FROM unnest($1::text[], $3::int8[]) AS c(d, v)",
    [claimed.map((c) => c.deliveryId), workerId, claimed.map((c) => c.leaseVersion)],
  );
}

/**
 * A claim or settle PostgreSQL aborted (deadlock, serialization failure) is given up and
 * the loop goes on, as the real worker's loop does. So a claim that lost its row lock shows
 * up as what it breaks — two rows of one delivery in `test_claims` — and not as a crashed
 * child (deadlocks between claimers are a symptom of the missing lock, not what WH-10 counts).
 */
async function orAborted<T>(work: () => Promise<T>): Promise<T | "aborted"> {
  try {
    return await work();
  } catch (error) {
    if (isRetryableTransactionError(error)) return "aborted";
    throw error;
  }
}

async function race(): Promise<void> {
  let claimedTotal = 0;
  let won = 0;
  let aborted = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const nowMs = Date.now();
    const claimed = await orAborted(() =>
      claimDue(db, { workerId, nowMs, leaseMs, httpDeadlineMs, limit: RACE_BATCH }),
    );
    if (claimed === "aborted") {
      aborted++;
      continue;
    }
    if (claimed.length === 0) break;
    claimedTotal += claimed.length;
    await recordClaims(claimed);
    const results = claimed.map((lease) => ({
      lease,
      startedAtMs: nowMs,
      durationMs: 1,
      responseClass: "2xx",
      status: 200,
      next: { state: "succeeded" as const },
    }));
    const writes = await orAborted(() => recordAttempts(db, results, Date.now()));
    if (writes === "aborted") aborted++;
    else won += writes.filter((w) => w.won).length;
  }
  await send({ kind: "done", claimed: claimedTotal, won, aborted });
}

async function hold(): Promise<void> {
  const claimed = await claimDue(db, { workerId, nowMs: Date.now(), leaseMs, httpDeadlineMs, limit: 1_000 });
  await recordClaims(claimed);
  const plans = await Promise.all(claimed.map((lease) => loadForSend(db, lease, Date.now())));
  if (!plans.every((plan) => plan.send)) throw new Error("hold: a claimed delivery was not sendable");
  await send({
    kind: "holding",
    leases: claimed.map((c) => ({
      deliveryId: c.deliveryId,
      leaseVersion: String(c.leaseVersion),
      leaseExpiresAtMs: c.leaseExpiresAtMs,
    })),
  });
  // "Sending": the endpoint never answers. Only SIGKILL ends this process.
  setInterval(() => {}, 60_000);
}

process.on("message", (message) => {
  if (message !== "go") return;
  (mode === "race" ? race() : hold())
    .catch(async (err) => {
      process.stderr.write(`${workerId}: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exitCode = 1;
    })
    .finally(async () => {
      if (mode === "race") {
        await db.close();
        process.disconnect();
      }
    });
});
await send({ kind: "ready" });
