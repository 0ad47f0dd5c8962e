/**
 * PY-10's daily job in a running service: once per UTC day, reconcile the previous day's
 * settlement file (reconciler.ts). A day already reconciled is skipped; a file the acquirer has
 * not published yet is tried again at the next check (re-runs add no duplicate exceptions anyway).
 * A loop on kit's BackgroundLoop: checks never overlap and never hold the process open; the first
 * one a minute after start (the service is up and serving by then), then hourly.
 *
 * @example
 * const daily = new DailyReconciliation({ db, clock: systemClock, acquirerUrl, feeBps: 150, log });
 * daily.start();
 * await daily.stop();
 */
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop, unrefSleep } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyBaseLogger } from "fastify";
import { reconciliationRunExists } from "../store/backlog-counts.ts";
import { previousUtcDate, reconcileDate } from "./reconciler.ts";

/** How often the daily reconciliation checks whether yesterday's D+1 file is due and not yet run. */
export const DEFAULT_RECONCILE_CHECK_MS = 3_600_000;
/** The first check after start. */
export const DEFAULT_FIRST_CHECK_MS = 60_000;

export interface DailyReconciliationOptions {
  db: Database;
  clock: Clock;
  acquirerUrl: string;
  /** The contracted acquirer fee, in basis points (PAYMENTS_ACQUIRER_FEE_BPS). */
  feeBps: number;
  log: FastifyBaseLogger;
  /** The first check after start, in ms. Default 60 000. */
  firstCheckMs?: number;
  /** The pause between checks, in ms. Default 3 600 000. */
  checkEveryMs?: number;
}

export class DailyReconciliation {
  readonly #options: DailyReconciliationOptions;
  readonly #loop: BackgroundLoop;
  #first: NodeJS.Timeout | undefined;

  constructor(options: DailyReconciliationOptions) {
    this.#options = options;
    const everyMs = options.checkEveryMs ?? DEFAULT_RECONCILE_CHECK_MS;
    this.#loop = new BackgroundLoop({
      name: "daily reconciliation",
      round: () => this.#check(),
      idleMs: everyMs,
      failureBackoff: { capMs: everyMs, jitter: "none" },
      onError: (error) => options.log.warn({ err: error }, "reconciliation check failed"),
      sleep: unrefSleep,
    });
  }

  start(): void {
    this.#first = setTimeout(() => this.#loop.start(), this.#options.firstCheckMs ?? DEFAULT_FIRST_CHECK_MS);
    this.#first.unref();
  }

  async stop(): Promise<void> {
    clearTimeout(this.#first);
    await this.#loop.stop();
  }

  /** One check; false: the loop waits its interval before the next. */
  async #check(): Promise<boolean> {
    const { db, clock, acquirerUrl, feeBps, log } = this.#options;
    const date = previousUtcDate(clock.nowMs());
    try {
      if (await reconciliationRunExists(db, date)) return false;
      const summary = await reconcileDate({ db, clock, feeBps }, date, { acquirerUrl });
      // PY-17: the last-line alarm — differences are a warning (and payments_reconciliation_open_exceptions).
      if (summary.differences > 0)
        log.warn({ date, summary }, "reconciliation found differences with the acquirer's file");
      else log.info({ date, summary }, "reconciliation run recorded");
    } catch (error) {
      log.warn({ err: error, date }, "reconciliation not run; retrying at the next check");
    }
    return false;
  }
}
