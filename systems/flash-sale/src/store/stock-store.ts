/**
 * The sale's hot stock (FS-04/05): one counter per sale in Redis (or the in-process twin),
 * the holds it counts as taken in a sorted set by expiry (FS-09), and every operation one
 * script. The store owns the key names, turns typed arguments into KEYS/ARGV and checks each
 * reply's shape once; callers see domain values on both engines.
 *
 * Keys of one sale share a hash tag (`sale:{id}:…`), so each script's keys sit in one
 * cluster slot.
 *
 * @example
 * const stock = new StockStore(runner);
 * await stock.restore("s1", { epoch: 1, available: 5_000, carried: [], recheckMs: 30_000 });
 * const r = await stock.reserve("s1", { holdId: "h_1", quantity: 1, holdTtlMs: 600_000 });
 * r.kind; // "reserved", r.availableAfter === 4_999
 */

import { redisErrors } from "@casebook/infra/redis/redis-errors";
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { assert } from "@casebook/kit/assert";
import type { ReserveReply, StockPort } from "../domain/checkout.ts";

/** Where the scripts live: `ScriptRegistry.fromDir(stockScriptsDir)`. */
export const stockScriptsDir = new URL("./scripts/", import.meta.url);

export interface StockView {
  /** -1 when Redis has no stock for the sale (lost: recompute it). */
  readonly available: number;
  readonly epoch: number;
  /** Holds the counter counts as taken and not yet settled. */
  readonly holds: number;
}

export interface RestoreInput {
  readonly epoch: number;
  readonly available: number;
  /** Holds still counted as taken (charging), carried into the new sorted set. */
  readonly carried: readonly { holdId: string; quantity: number }[];
  /** When the carried holds are looked at next. */
  readonly recheckMs: number;
}

export function stockKeys(saleId: string) {
  const tag = `sale:{${saleId}}`;
  return { stock: `${tag}:stock`, holds: `${tag}:holds`, quantities: `${tag}:hold-qty` } as const;
}

function isInt(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

export class StockStore implements StockPort {
  readonly #runner: ScriptRunner;

  constructor(runner: ScriptRunner) {
    this.#runner = runner;
  }

  /**
   * FS-05: subtract, refuse below zero and undo, record the hold's expiry — one script.
   * `availableAfter` is the counter right after the subtraction: 0 = this call took the last
   * one, negative = refused (and undone). `missing`: Redis has no stock for the sale (FS-11).
   */
  async reserve(
    saleId: string,
    hold: { holdId: string; quantity: number; holdTtlMs: number },
  ): Promise<ReserveReply> {
    const k = stockKeys(saleId);
    let reply: unknown;
    try {
      reply = await this.#runner.run(
        "reserve-stock",
        [k.stock, k.holds, k.quantities],
        [hold.holdId, hold.quantity, hold.holdTtlMs],
      );
    } catch (error) {
      if (redisErrors.is(error, "REDIS_SCRIPT_FAILED") && error.fields.replyCode === "STOCK_MISSING") {
        return { kind: "missing" };
      }
      throw error;
    }
    assert(Array.isArray(reply) && reply.length === 4 && reply.every(isInt), `reserve-stock: ${reply}`);
    const [reserved, availableAfter, epoch, expiresAtMs] = reply as number[];
    if (reserved !== 1) {
      assert(availableAfter! < 0, "refused only below zero");
      return { kind: "refused", availableAfter: availableAfter! };
    }
    assert(availableAfter! >= 0, "reserved only at or above zero");
    return { kind: "reserved", availableAfter: availableAfter!, epoch: epoch!, expiresAtMs: expiresAtMs! };
  }

  /** Gives a released hold's tickets back, at most once (the sorted set is the gate). */
  async returnHold(saleId: string, holdId: string): Promise<{ returned: boolean; available: number }> {
    const k = stockKeys(saleId);
    const reply = await this.#runner.run("return-hold", [k.stock, k.holds, k.quantities], [holdId]);
    assert(Array.isArray(reply) && reply.length === 2 && reply.every(isInt), `return-hold: ${reply}`);
    return { returned: reply[0] === 1, available: reply[1] as number };
  }

  /** A paid hold leaves the sorted set; its tickets stay taken. */
  async settleHold(saleId: string, holdId: string): Promise<boolean> {
    const k = stockKeys(saleId);
    const reply = await this.#runner.run("settle-hold", [k.holds, k.quantities], [holdId]);
    assert(reply === 0 || reply === 1, `settle-hold: ${reply}`);
    return reply === 1;
  }

  /** Holds whose expiry (or recheck) time has passed, by Redis's clock. */
  async dueHolds(saleId: string, maxBatch: number): Promise<{ nowMs: number; holdIds: string[] }> {
    const reply = await this.#runner.run("due-holds", [stockKeys(saleId).holds], [maxBatch]);
    assert(Array.isArray(reply) && isInt(reply[0]), `due-holds: ${reply}`);
    return { nowMs: reply[0] as number, holdIds: reply.slice(1).map(String) };
  }

  /** Looks at a hold again `delayMs` from now (a frozen, charging hold). */
  async deferHold(saleId: string, holdId: string, delayMs: number): Promise<boolean> {
    const reply = await this.#runner.run("defer-hold", [stockKeys(saleId).holds], [holdId, delayMs]);
    assert(reply === 0 || reply === 1, `defer-hold: ${reply}`);
    return reply === 1;
  }

  /** Writes the stock computed from PostgreSQL; false when a newer epoch is there already. */
  async restore(saleId: string, input: RestoreInput): Promise<boolean> {
    const k = stockKeys(saleId);
    const pairs = input.carried.flatMap((h) => [h.holdId, h.quantity]);
    const reply = await this.#runner.run(
      "restore-stock",
      [k.stock, k.holds, k.quantities],
      [input.epoch, input.available, input.recheckMs, ...pairs],
    );
    assert(reply === 0 || reply === 1, `restore-stock: ${reply}`);
    return reply === 1;
  }

  async view(saleId: string): Promise<StockView> {
    const k = stockKeys(saleId);
    const reply = await this.#runner.run("stock-view", [k.stock, k.holds], []);
    assert(Array.isArray(reply) && reply.length === 3 && reply.every(isInt), `stock-view: ${reply}`);
    const [available, epoch, holds] = reply as number[];
    return { available: available!, epoch: epoch!, holds: holds! };
  }

  /**
   * FS-03, kept to show the bug: read the stock, check > 0 in this process, write stock − 1.
   * Two calls inside the window between the read and the write both read 1 and both sell.
   * Reachable only with `FLASH_SALE_STOCK_MODE=naive`; never the default.
   */
  async naiveReserve(saleId: string, quantity: number): Promise<{ reserved: boolean; read: number }> {
    const { stock } = stockKeys(saleId);
    const read = await this.#runner.run("naive-read", [stock], []);
    assert(isInt(read), `naive-read: ${read}`);
    if (read < quantity) return { reserved: false, read };
    await this.#runner.run("naive-write", [stock], [read - quantity]);
    return { reserved: true, read };
  }
}
