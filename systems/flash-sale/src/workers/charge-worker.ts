/**
 * The charge queue's drain (FS-15, FS-18): charges leave at a configured rate so the
 * processor never receives more than it takes, and each step of a hold's charge is durable
 * in its `charges` row, so the saga survives a worker killed at any point.
 *
 *   charge ──approved──▶ record ──order written──▶ done (paid; the hold settles in Redis)
 *     │                    └──order refused (FS-10)──▶ refund ──▶ done (compensated; tickets back)
 *     ├──declined──▶ done (declined; tickets back)
 *     └──pending / error──▶ charge again later, with the SAME idempotency key (no double charge)
 *
 * Rows are claimed with infra's LeaseQueue (`FOR UPDATE SKIP LOCKED`, lease + version fence)
 * in `seq` order, at most `maxBatch` a claim, and advanced by `maxInFlight` lanes at once. Every
 * call to the processor (a charge, a refund) is paced by a token bucket (burst 1: spaced 1/rate
 * apart) inside a ProcessorWindow (at most `ratePerS` calls land at the processor in any second,
 * whatever their latency). Ordering, stated (correction 10): with one lane one worker drains
 * FIFO; with several lanes, or several workers, charges START in seq order per claim (the
 * window serves its waiters in order) and may finish out of it — FIFO holds per lane, not
 * globally, as SQS FIFO holds it per message group.
 *
 * @example
 * const worker = new ChargeWorker({ db, stock, charger, clock, ratePerS: 50, maxInFlight: 8, … });
 * worker.start(); … await worker.stop();
 */
import { leaseOwnerId } from "@casebook/infra/sql/lease-owner";
import { type Claimed, LeaseQueue } from "@casebook/infra/sql/lease-queue";
import type { Database } from "@casebook/infra/sql/sql";
import { isUniqueViolation } from "@casebook/infra/sql/sql-state";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { TokenBucket } from "@casebook/kit/token-bucket";
import type { Charger } from "../domain/charger.ts";
import { completeOrder, transitionHold } from "../store/sale-repository.ts";
import type { StockStore } from "../store/stock-store.ts";
import { ProcessorWindow } from "./processor-window.ts";

interface ChargeRow {
  hold_id: string;
  sale_id: string;
  amount_minor: bigint;
  currency: string;
  step: "charge" | "record" | "refund" | "done";
  payment_id: string | null;
  attempts: number;
}

export interface ChargeWorkerOptions {
  db: Database;
  stock: StockStore;
  charger: Charger;
  clock: Clock;
  /** Charges sent per second at most, this worker (FS-15: at or below what payments sustains). */
  ratePerS: number;
  /** Rows per claim at most. */
  maxBatch: number;
  /** Rows of a claim advanced at once (calls open at the processor, at most); default 1. */
  maxInFlight?: number;
  /** A claimed row's lease: longer than one charge call's timeout. */
  leaseMs: number;
  /** Pause between rounds with nothing due. */
  idleMs: number;
  /** Retry delay of a pending or failed charge: min(cap, base · 2^attempts). */
  retryBaseMs: number;
  retryCapMs: number;
  onError?: (error: unknown, holdId?: string) => void;
  /** Told of each call to the processor (tests count arrivals per second). */
  onCharge?: (holdId: string) => void;
}

export interface ChargeRound {
  claimed: number;
  paid: number;
  declined: number;
  compensated: number;
  retried: number;
}

export class ChargeWorker {
  readonly #o: ChargeWorkerOptions;
  readonly #queue = new LeaseQueue<ChargeRow, string>({
    table: "charges",
    idColumn: "hold_id",
    idType: "text",
    claimable: "t.step <> 'done'",
    order: "t.seq",
    returning: "t.hold_id, t.sale_id, t.amount_minor, t.currency, t.step, t.payment_id, t.attempts",
    minLeaseMs: 1_000,
  });
  readonly #bucket: TokenBucket;
  readonly #window: ProcessorWindow;
  readonly #owner = leaseOwnerId("charge");
  readonly #loop: BackgroundLoop;

  constructor(options: ChargeWorkerOptions) {
    this.#o = options;
    // Burst of one: arrivals at the processor never exceed the rate in any second.
    this.#bucket = new TokenBucket({
      capacity: 1,
      ratePerS: options.ratePerS,
      nowMs: options.clock.monotonicMs(),
    });
    this.#window = new ProcessorWindow({ ratePerS: options.ratePerS });
    this.#loop = new BackgroundLoop({
      name: "charge worker",
      round: async () => (await this.runOnce()).claimed > 0,
      idleMs: options.idleMs,
      failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
      onError: (error) => options.onError?.(error),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One claim: each row's next step, charges paced by the rate. */
  async runOnce(): Promise<ChargeRound> {
    const { db, clock } = this.#o;
    const round: ChargeRound = { claimed: 0, paid: 0, declined: 0, compensated: 0, retried: 0 };
    const claimed = await this.#queue.claim(db, {
      owner: this.#owner,
      nowMs: clock.nowMs(),
      leaseMs: this.#o.leaseMs,
      limit: this.#o.maxBatch,
    });
    round.claimed = claimed.length;
    let next = 0;
    const lane = async () => {
      while (next < claimed.length) {
        const item = claimed[next++]!;
        try {
          await this.#advance(item, round);
        } catch (error) {
          this.#o.onError?.(error, item.row.hold_id);
          await this.#retryLater(item);
          round.retried += 1;
        }
      }
    };
    const lanes = Math.min(claimed.length, Math.max(1, this.#o.maxInFlight ?? 1));
    await Promise.all(Array.from({ length: lanes }, lane));
    return round;
  }

  async #advance(item: Claimed<ChargeRow, string>, round: ChargeRound): Promise<void> {
    const { row } = item;
    if (row.step === "charge") {
      const r = await this.#toProcessor(() => {
        this.#o.onCharge?.(row.hold_id);
        return this.#o.charger.charge({
          idempotencyKey: row.hold_id,
          amountMinor: row.amount_minor,
          currency: row.currency,
        });
      });
      if (r.kind === "pending") {
        await this.#retryLater(item);
        round.retried += 1;
        return;
      }
      if (r.kind === "declined") {
        await this.#release(row, "declined");
        await this.#finish(item, "declined", r.paymentId ?? null);
        round.declined += 1;
        return;
      }
      await this.#write(item, (p) => `step = 'record', payment_id = ${p.add(r.paymentId)}`, "keep");
      row.step = "record";
      row.payment_id = r.paymentId;
    }
    if (row.step === "record") {
      try {
        const done = await completeOrder(this.#o.db, {
          holdId: row.hold_id,
          paymentId: row.payment_id!,
          amountMinor: row.amount_minor,
          nowMs: this.#o.clock.nowMs(),
        });
        if (done.kind === "paid") await this.#o.stock.settleHold(row.sale_id, row.hold_id);
        await this.#finish(item, "paid", row.payment_id);
        round.paid += 1;
        return;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        // FS-18: approved, and the order cannot be written (FS-10 refused a number): compensate.
        await this.#write(item, "step = 'refund'", "keep");
        row.step = "refund";
      }
    }
    if (row.step === "refund") {
      await this.#toProcessor(() =>
        this.#o.charger.refund({
          idempotencyKey: `refund:${row.hold_id}`,
          paymentId: row.payment_id!,
          amountMinor: row.amount_minor,
        }),
      );
      await this.#release(row, "compensated");
      await this.#finish(item, "compensated", row.payment_id);
      round.compensated += 1;
    }
  }

  /** One call to the processor: a permit of the window, then the rate's next token. */
  #toProcessor<T>(call: () => Promise<T>): Promise<T> {
    return this.#window.run(async () => {
      await this.#pace();
      return call();
    });
  }

  /** Waits for the rate's next token: sends spaced 1/ratePerS apart. */
  async #pace(): Promise<void> {
    for (;;) {
      const waitMs = this.#bucket.take(this.#o.clock.monotonicMs());
      if (waitMs <= 0) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(waitMs, 1_000)));
    }
  }

  async #release(row: ChargeRow, event: "declined" | "compensated"): Promise<void> {
    const t = await transitionHold(this.#o.db, row.hold_id, event, this.#o.clock.nowMs());
    if (t.won || t.hold?.state === "released") await this.#o.stock.returnHold(row.sale_id, row.hold_id);
  }

  async #finish(item: Claimed<ChargeRow, string>, outcome: string, paymentId: string | null): Promise<void> {
    await this.#write(
      item,
      (p) =>
        `step = 'done', outcome = ${p.add(outcome)}, payment_id = ${p.add(paymentId)}, finished_at = ${p.now}`,
      "release",
    );
  }

  async #retryLater(item: Claimed<ChargeRow, string>): Promise<void> {
    const { retryBaseMs, retryCapMs, clock } = this.#o;
    const delayMs = Math.min(retryCapMs, retryBaseMs * 2 ** Math.min(item.row.attempts, 20));
    await this.#write(
      item,
      (p) => `attempts = t.attempts + 1, next_attempt_at = ${p.add(new Date(clock.nowMs() + delayMs))}`,
      "release",
    );
  }

  async #write(
    item: Claimed<ChargeRow, string>,
    set: string | ((p: { now: string; add(v: unknown): string }) => string),
    lease: "keep" | "release",
  ): Promise<void> {
    const w = await this.#queue.update(this.#o.db, item.lease, { nowMs: this.#o.clock.nowMs(), set, lease });
    if (!w.won) throw new Error(`charge ${item.row.hold_id}: the lease was lost; another worker has it`);
    // Every fenced write bumps the version: a kept lease's next write fences on the new one.
    item.lease.leaseVersion += 1n;
  }
}
