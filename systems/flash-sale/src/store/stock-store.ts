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
import { type ScriptCall, scriptFailed } from "@casebook/infra/redis/script-registry";
import type { ScriptRunner } from "@casebook/infra/redis/script-runner";
import { assert } from "@casebook/kit/assert";
import type { GroupCommitStats } from "@casebook/kit/group-commit";
import { GroupCommitLanes } from "@casebook/kit/group-commit-lanes";
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

/** One hold's outcome in a reserve-script call: its reply, or the call's failure. */
type Decision = ReserveReply | { kind: "failed"; error: unknown };

function reserveCall(saleId: string, holds: readonly HoldRequest[]): ScriptCall {
  const k = stockKeys(saleId);
  return {
    name: "reserve-stock",
    keys: [k.stock, k.holds, k.quantities],
    args: holds.flatMap((h) => [h.holdId, h.quantity, h.holdTtlMs]),
  };
}

/** A reserve-script call's outcome, one decision per hold, in call order; checked once per call. */
function decide(holds: number, settled: PromiseSettledResult<unknown>): Decision[] {
  if (settled.status === "rejected") {
    const error = settled.reason;
    const missing =
      redisErrors.is(error, "REDIS_SCRIPT_FAILED") && error.fields.replyCode === "STOCK_MISSING";
    const decision: Decision = missing ? { kind: "missing" } : { kind: "failed", error };
    return Array.from({ length: holds }, () => decision);
  }
  const reply = settled.value;
  if (!(Array.isArray(reply) && reply.length === holds * RESERVE_STRIDE && reply.every(isInt))) {
    assert(false, "reserve-stock: one 4-integer decision per hold", { holds, reply: String(reply) });
  }
  const out: Decision[] = [];
  for (let at = 0; at < reply.length; at += RESERVE_STRIDE) {
    const [reserved, availableAfter, epoch, expiresAtMs] = reply.slice(at, at + RESERVE_STRIDE) as number[];
    if (reserved === -1) {
      out.push({ kind: "failed", error: scriptFailed("reserve-stock", "HOLD_EXISTS this hold id is taken") });
    } else if (reserved === 1) {
      assert(availableAfter! >= 0, "reserved only at or above zero");
      out.push({
        kind: "reserved",
        availableAfter: availableAfter!,
        epoch: epoch!,
        expiresAtMs: expiresAtMs!,
      });
    } else {
      assert(availableAfter! < 0, "refused only below zero");
      out.push({ kind: "refused", availableAfter: availableAfter! });
    }
  }
  return out;
}

function unwrap(decision: Decision): ReserveReply {
  if (decision.kind === "failed") throw decision.error;
  return decision;
}

function isInt(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

/** One hold to reserve: the reserve script's ARGV triple. */
export interface HoldRequest {
  readonly holdId: string;
  readonly quantity: number;
  readonly holdTtlMs: number;
}

export interface StockStoreOptions {
  /**
   * Batch reservations across concurrent callers (kit's GroupCommit): while one reserve call
   * is on the wire, the next callers' holds wait and go together, one script call per sale
   * for up to `maxBatch` holds, every sale of the batch in one pipeline. No timer: an idle
   * store sends the first hold at once. Absent: one script call per reservation.
   */
  readonly reserveBatch?: {
    readonly maxBatch: number;
    readonly maxPending: number;
    /**
     * Batches in flight at once (default 1; kit's GroupCommitLanes): with one, Redis idles
     * while Node reads a reply and builds the next batch; a few keep it busy.
     */
    readonly lanes?: number;
  };
}

/** Holds per reserve-script call: the script's own bound. */
export const MAX_RESERVE_BATCH = 1_000;
/** Values per hold in the reserve script's reply. */
const RESERVE_STRIDE = 4;

interface PendingReserve {
  readonly saleId: string;
  readonly hold: HoldRequest;
}

export class StockStore implements StockPort {
  readonly #runner: ScriptRunner;
  readonly #batch: GroupCommitLanes<PendingReserve, Decision> | undefined;

  constructor(runner: ScriptRunner, options: StockStoreOptions = {}) {
    this.#runner = runner;
    const b = options.reserveBatch;
    if (b !== undefined) {
      if (!(Number.isInteger(b.maxBatch) && b.maxBatch >= 1 && b.maxBatch <= MAX_RESERVE_BATCH)) {
        throw new RangeError(`reserveBatch.maxBatch must be an integer in [1, ${MAX_RESERVE_BATCH}]`);
      }
      this.#batch = new GroupCommitLanes((items) => this.#reserveMany(items), {
        maxBatch: b.maxBatch,
        maxPending: Math.max(1, Math.ceil(b.maxPending / (b.lanes ?? 1))),
        lanes: b.lanes ?? 1,
      });
    }
  }

  /**
   * FS-05: subtract, refuse below zero and undo, record the hold's expiry — one script.
   * `availableAfter` is the counter right after the subtraction: 0 = this call took the last
   * one, negative = refused (and undone). `missing`: Redis has no stock for the sale (FS-11).
   * Batched or not, each hold is decided on its own, in arrival order, inside one script run.
   */
  async reserve(saleId: string, hold: HoldRequest): Promise<ReserveReply> {
    if (this.#batch === undefined) return unwrap((await this.#reserveOneSale(saleId, [hold]))[0]!);
    // Checked here so one caller's bad hold never fails the batch it would have joined.
    for (const [name, value] of [
      ["quantity", hold.quantity],
      ["holdTtlMs", hold.holdTtlMs],
    ] as const) {
      if (!(Number.isInteger(value) && value >= 1)) {
        throw scriptFailed("reserve-stock", `ARG_INVALID ${name} must be an integer >= 1`);
      }
    }
    return unwrap(await this.#batch.submit({ saleId, hold }));
  }

  /** Batches written and holds they carried; undefined when reservations are not batched. */
  get reserveBatchStats(): GroupCommitStats | undefined {
    return this.#batch?.stats;
  }

  /** Waits for every batched reservation submitted so far (shutdown). */
  async drain(): Promise<void> {
    await this.#batch?.drain();
  }

  /** Reservations grouped by sale: one script call each, all of them in one pipeline. */
  async #reserveMany(items: PendingReserve[]): Promise<Decision[]> {
    const bySale = new Map<string, number[]>();
    items.forEach((item, i) => {
      const at = bySale.get(item.saleId);
      if (at === undefined) bySale.set(item.saleId, [i]);
      else at.push(i);
    });
    const sales = [...bySale.entries()];
    const holdsOf = (indexes: number[]) => indexes.map((i) => items[i]!.hold);
    const decided =
      sales.length === 1
        ? [await this.#reserveOneSale(sales[0]![0], holdsOf(sales[0]![1]))]
        : (
            await this.#runner.runBatch(
              sales.map(([saleId, indexes]) => reserveCall(saleId, holdsOf(indexes))),
            )
          ).map((settled, s) => decide(sales[s]![1].length, settled));
    const out: Decision[] = new Array(items.length);
    sales.forEach(([, indexes], s) => {
      indexes.forEach((i, j) => {
        out[i] = decided[s]![j]!;
      });
    });
    return out;
  }

  async #reserveOneSale(saleId: string, holds: readonly HoldRequest[]): Promise<Decision[]> {
    const call = reserveCall(saleId, holds);
    try {
      return decide(holds.length, {
        status: "fulfilled",
        value: await this.#runner.run(call.name, call.keys, call.args),
      });
    } catch (error) {
      return decide(holds.length, { status: "rejected", reason: error });
    }
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
