/**
 * Idempotency claims of requests the database failed: given back, so a client retrying with the
 * key after the database returns starts at once instead of meeting 409 IN_PROGRESS until the
 * claim's lease (60 s) runs out — and never charged twice, since everything here is fenced.
 *
 * Two ways a failed request leaves a claim behind:
 * - its writes failed after `begin`: the request holds the lease and `release`s it
 *   (`releaseAfterFailure`, in the `catch` of each keyed API write);
 * - `begin` itself failed after its INSERT was sent (the answer was lost with the link, or a
 *   silent link delivered it late): the request holds no lease, only the instant it stamped on
 *   the claim (`beginClaim`), and the claim is abandoned by that instant.
 *
 * When the database that failed the request also fails that clean-up (it is still unreachable),
 * the clean-up is retried in the background, with backoff, for as long as the claim's lease would
 * have held it anyway. However late it lands it is safe: `release` is fenced by the claim's
 * generation, and a fresh claim is deleted only while it is still at "started" (nothing of the
 * request committed) and nobody took it over.
 *
 * Never throws on the failure path: the caller rethrows the request's own error (the 503 the
 * client must see).
 *
 * @example
 * const begun = await beginClaim(store, db, { scope: merchantId, key, fingerprint, nowMs: clock.nowMs() }, reply.log);
 * try { await db.transaction(...); } catch (error) { await releaseAfterFailure(store, db, lease, reply.log); throw error; }
 */
import { setTimeout as sleep } from "node:timers/promises";
import { BackoffPolicy } from "@casebook/kit/backoff";
import { DEFAULT_LEASE_S } from "@casebook/kit/idempotency";
import { systemRandom } from "@casebook/kit/random";
import type { BeginInput, BeginResult, IdempotencyLease, IdempotencyStore } from "./idempotency-store.ts";
import type { Queryable } from "./sql.ts";
import { sqlErrors } from "./sql-errors.ts";

/** The one logger call made here (a Fastify request logger or pino fits). */
export interface ClaimLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

/** Bound on clean-ups waiting in the background in one process; past it a claim waits out its lease. */
export const MAX_PENDING_CLEANUPS = 1_000;
/**
 * Checks that found no unacknowledged claim before one is given up: a silent link delivers what
 * it held as it heals, so the claim may land just after the database answers again.
 */
export const ABANDON_CLEAN_CHECKS = 3;

/** From 100 ms to 2 s apart, for as long as the claim's lease would hold it anyway (≈ 35 tries). */
const CLEANUP_RETRY = new BackoffPolicy({
  baseMs: 100,
  capMs: 2_000,
  jitter: "equal",
  random: systemRandom,
  budgetMs: DEFAULT_LEASE_S * 1_000,
  maxAttempts: 64,
});

let pendingCleanups = 0;

/** Claims this process is still trying to give back. */
export function pendingClaimCleanups(): number {
  return pendingCleanups;
}

/** One clean-up attempt: finished, or to be tried again after the backoff. */
type Attempt = () => Promise<"done" | "again">;

/**
 * `store.begin` with the instant it stamps chosen here, so that when begin fails on
 * SQL_UNAVAILABLE a claim it may have left is abandoned by that instant (in the background).
 */
export async function beginClaim(
  store: IdempotencyStore,
  db: Queryable,
  input: BeginInput & { nowMs: number },
  log: ClaimLog,
): Promise<BeginResult> {
  try {
    return await store.begin(input);
  } catch (error) {
    if (sqlErrors.is(error, "SQL_UNAVAILABLE")) {
      const claim = { scope: input.scope, key: input.key, claimedAtMs: input.nowMs };
      let cleanChecks = 0;
      retryInBackground(input.key, log, async () => {
        if (await store.abandonUnacknowledged(db, claim)) return "done";
        cleanChecks += 1;
        return cleanChecks >= ABANDON_CLEAN_CHECKS ? "done" : "again";
      });
    }
    throw error;
  }
}

/** Releases `lease`; on SQL_UNAVAILABLE keeps trying in the background (bounded). Never throws. */
export async function releaseAfterFailure(
  store: IdempotencyStore,
  db: Queryable,
  lease: IdempotencyLease,
  log: ClaimLog,
): Promise<void> {
  try {
    await store.release(db, lease);
  } catch (error) {
    if (!sqlErrors.is(error, "SQL_UNAVAILABLE")) {
      log.warn({ err: error, key: lease.key }, "idempotency claim kept until its lease ends");
      return;
    }
    retryInBackground(lease.key, log, async () => {
      await store.release(db, lease);
      return "done";
    });
  }
}

/** Runs `attempt` after each backoff delay until it is done, fails otherwise, or the budget ends. */
function retryInBackground(key: string, log: ClaimLog, attempt: Attempt): void {
  if (pendingCleanups >= MAX_PENDING_CLEANUPS) {
    log.warn({ key, pendingCleanups }, "idempotency claim kept until its lease ends");
    return;
  }
  pendingCleanups += 1;
  void retryLoop(key, log, attempt).finally(() => {
    pendingCleanups -= 1;
  });
}

async function retryLoop(key: string, log: ClaimLog, attempt: Attempt): Promise<void> {
  const startMs = performance.now();
  for (let n = 1; ; n++) {
    const decision = CLEANUP_RETRY.next(n, performance.now() - startMs);
    if (!decision.retry) {
      log.warn({ key, attempts: n }, "idempotency claim kept until its lease ends");
      return;
    }
    // Unreferenced: a pending clean-up never holds a stopping process open (the lease covers it).
    await sleep(decision.delayMs, undefined, { ref: false });
    try {
      if ((await attempt()) === "done") return;
    } catch (error) {
      if (sqlErrors.is(error, "SQL_UNAVAILABLE")) continue;
      log.warn({ err: error, key }, "idempotency claim kept until its lease ends");
      return;
    }
  }
}
