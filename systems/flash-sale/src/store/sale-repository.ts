/**
 * The sale's durable truth in PostgreSQL (PGlite by default): sales, numbered tickets, holds
 * and orders (FS-10). Redis decides who gets through (the reserve script); this file records
 * what Redis admitted, off the reserve path — one transaction per admitted hold, a few thousand
 * per sale — and is what the stock is recomputed from when Redis loses it (FS-11).
 *
 * Ticket numbers: rows claimed with `FOR UPDATE SKIP LOCKED` (not a free list): a hold takes
 * the lowest free numbers no other open transaction is claiming, and a release sets them free
 * in the same transaction that releases the hold, so an expired hold's number never collides
 * with a live one. Every transition is a conditional UPDATE from the state
 * `HOLD_TRANSITIONS` names, so two writers racing on one hold cannot both win.
 *
 * Lock order, everywhere: the sale row first (`FOR SHARE` by holds and releases, `FOR UPDATE`
 * by the recompute), then holds and tickets. The recompute therefore sees no transaction half
 * done, and one that waited for it sees its new epoch.
 *
 * @example
 * await createSale(db, spec, clock.nowMs());
 * const bound = await bindHold(db, { holdId, saleId, buyer, quantity: 1, epoch, expiresAtMs, nowMs });
 * if (bound.kind === "bound") bound.numbers; // [17]
 */

import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { isUniqueViolation } from "@casebook/infra/sql/sql-state";
import { assert } from "@casebook/kit/assert";
import type { BindOutcome } from "../domain/checkout.ts";
import {
  HOLD_TRANSITIONS,
  type HoldEventKind,
  type HoldState,
  type ReleaseReason,
} from "../domain/hold-lifecycle.ts";

export interface SaleSpec {
  readonly id: string;
  readonly name: string;
  readonly tickets: number;
  readonly perBuyerMax: number;
  readonly holdTtlMs: number;
  readonly priceMinor: bigint;
  readonly currency: string;
  readonly opensAtMs: number;
}

export interface Sale extends SaleSpec {
  readonly stockEpoch: number;
  readonly createdAtMs: number;
}

export interface Hold {
  readonly id: string;
  readonly saleId: string;
  readonly buyer: string;
  readonly quantity: number;
  readonly numbers: number[];
  readonly state: HoldState;
  readonly releaseReason: ReleaseReason | null;
  readonly epoch: number;
  readonly expiresAtMs: number;
}

interface SaleRow {
  id: string;
  name: string;
  tickets: number;
  per_buyer_max: number;
  hold_ttl_ms: bigint;
  price_minor: bigint;
  currency: string;
  opens_at: Date;
  stock_epoch: bigint;
  created_at: Date;
}

interface HoldRow {
  id: string;
  sale_id: string;
  buyer: string;
  quantity: number;
  numbers: number[];
  state: HoldState;
  release_reason: ReleaseReason | null;
  epoch: bigint;
  expires_at: Date;
}

const HOLD_COLUMNS = "id, sale_id, buyer, quantity, numbers, state, release_reason, epoch, expires_at";

function toSale(r: SaleRow): Sale {
  return {
    id: r.id,
    name: r.name,
    tickets: r.tickets,
    perBuyerMax: r.per_buyer_max,
    holdTtlMs: Number(r.hold_ttl_ms),
    priceMinor: r.price_minor,
    currency: r.currency,
    opensAtMs: r.opens_at.getTime(),
    stockEpoch: Number(r.stock_epoch),
    createdAtMs: r.created_at.getTime(),
  };
}

function toHold(r: HoldRow): Hold {
  return {
    id: r.id,
    saleId: r.sale_id,
    buyer: r.buyer,
    quantity: r.quantity,
    numbers: r.numbers,
    state: r.state,
    releaseReason: r.release_reason,
    epoch: Number(r.epoch),
    expiresAtMs: r.expires_at.getTime(),
  };
}

/** Creates the sale with tickets 1..N and its FS-06 stock row; undefined when the id is taken. */
export async function createSale(db: Database, spec: SaleSpec, nowMs: number): Promise<Sale | undefined> {
  try {
    return await db.transaction(async (tx) => {
      const { rows } = await tx.query<SaleRow>(
        `INSERT INTO sales (id, name, tickets, per_buyer_max, hold_ttl_ms, price_minor, currency, opens_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
        [
          spec.id,
          spec.name,
          spec.tickets,
          spec.perBuyerMax,
          spec.holdTtlMs,
          spec.priceMinor,
          spec.currency,
          new Date(spec.opensAtMs),
          new Date(nowMs),
        ],
      );
      await tx.query(
        "INSERT INTO tickets (sale_id, number) SELECT $1, n FROM generate_series(1, $2::int4) AS n",
        [spec.id, spec.tickets],
      );
      await tx.query("INSERT INTO stock_rows (sale_id, available) VALUES ($1, $2)", [spec.id, spec.tickets]);
      return toSale(rows[0]!);
    });
  } catch (error) {
    if (isUniqueViolation(error, "sales_pkey")) return undefined;
    throw error;
  }
}

export async function getSale(db: Queryable, id: string): Promise<Sale | undefined> {
  const { rows } = await db.query<SaleRow>("SELECT * FROM sales WHERE id = $1", [id]);
  return rows[0] && toSale(rows[0]);
}

export async function listSaleIds(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>("SELECT id FROM sales ORDER BY created_at DESC LIMIT $1", [
    limit,
  ]);
  return rows.map((r) => r.id);
}

export async function getHold(db: Queryable, id: string): Promise<Hold | undefined> {
  const { rows } = await db.query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM holds WHERE id = $1`, [id]);
  return rows[0] && toHold(rows[0]);
}

export interface BindInput {
  readonly holdId: string;
  readonly saleId: string;
  readonly buyer: string;
  readonly quantity: number;
  /** The epoch the reserve script answered with. */
  readonly epoch: number;
  readonly expiresAtMs: number;
  readonly nowMs: number;
}

/** Thrown inside the transaction to roll back its claims; caught outside as the outcome. */
class Refused extends Error {
  readonly outcome: BindOutcome;
  constructor(outcome: BindOutcome) {
    super(outcome.kind);
    this.outcome = outcome;
  }
}

/** Records a hold Redis admitted: checks the epoch and the buyer's cap, claims ticket numbers. */
export async function bindHold(db: Database, input: BindInput): Promise<BindOutcome> {
  try {
    return await db.transaction(async (tx) => {
      const sale = await tx.query<{ stock_epoch: bigint; per_buyer_max: number; owned: bigint }>(
        `SELECT stock_epoch, per_buyer_max,
                (SELECT coalesce(sum(quantity), 0)::int8 FROM holds
                  WHERE sale_id = $1 AND buyer = $2 AND state <> 'released') AS owned
           FROM sales WHERE id = $1 FOR SHARE`,
        [input.saleId, input.buyer],
      );
      const row = sale.rows[0];
      if (row === undefined) return { kind: "unknown-sale" };
      if (Number(row.stock_epoch) !== input.epoch) return { kind: "stale-epoch" };
      const owned = Number(row.owned);
      if (owned + input.quantity > row.per_buyer_max) return { kind: "over-cap", owned };
      // Claim the lowest free numbers no open transaction is claiming, and record the hold
      // with them, in one statement; short of `quantity` numbers, nothing is inserted.
      const inserted = await tx.query<{ numbers: number[] }>(
        `WITH free AS (
           SELECT number FROM tickets WHERE sale_id = $2 AND hold_id IS NULL
            ORDER BY number LIMIT $4 FOR UPDATE SKIP LOCKED
         ), claimed AS (
           UPDATE tickets t SET hold_id = $1 FROM free
            WHERE t.sale_id = $2 AND t.number = free.number RETURNING t.number
         )
         INSERT INTO holds (id, sale_id, buyer, quantity, numbers, state, epoch, expires_at, created_at, updated_at)
         SELECT $1, $2, $3, $4, array_agg(number ORDER BY number), 'held', $5, $6, $7, $7
           FROM claimed HAVING count(*) = $4
         RETURNING numbers`,
        [
          input.holdId,
          input.saleId,
          input.buyer,
          input.quantity,
          input.epoch,
          new Date(input.expiresAtMs),
          new Date(input.nowMs),
        ],
      );
      if (inserted.rows[0] === undefined) throw new Refused({ kind: "no-ticket" });
      const numbers = inserted.rows[0].numbers;
      return { kind: "bound", numbers };
    });
  } catch (error) {
    if (error instanceof Refused) return error.outcome;
    if (isUniqueViolation(error, "holds_one_live_per_buyer")) return { kind: "buyer-has-hold" };
    throw error;
  }
}

export type TransitionOutcome = { won: true; hold: Hold } | { won: false; hold: Hold | undefined };

/**
 * Moves a hold along `HOLD_TRANSITIONS[event]` if it is still in the source state (and, for
 * pay, before its deadline; for expire, at or after it). A release frees its ticket numbers in
 * the same transaction. The loser of a race gets `won: false` and the hold as it is now.
 */
export async function transitionHold(
  db: Database,
  holdId: string,
  event: Exclude<HoldEventKind, "approved">,
  nowMs: number,
): Promise<TransitionOutcome> {
  const rule = HOLD_TRANSITIONS[event];
  const deadline = event === "pay" ? "AND expires_at > $5" : event === "expire" ? "AND expires_at <= $5" : "";
  const update = `UPDATE holds SET state = $2, release_reason = $3, updated_at = $5
     WHERE id = $1 AND state = $4 ${deadline}
     RETURNING ${HOLD_COLUMNS}`;
  const params = [holdId, rule.to, rule.reason ?? null, rule.from, new Date(nowMs)];
  if (rule.to !== "released") {
    // One statement, atomic on its own: no ticket changes hands, no sale lock needed.
    const { rows } = await db.query<HoldRow>(update, params);
    return rows[0] === undefined
      ? { won: false, hold: await getHold(db, holdId) }
      : { won: true, hold: toHold(rows[0]) };
  }
  return db.transaction(async (tx) => {
    // The sale row first (FOR SHARE), as every writer of tickets does: a recompute is never interleaved.
    await tx.query("SELECT 1 FROM sales WHERE id = (SELECT sale_id FROM holds WHERE id = $1) FOR SHARE", [
      holdId,
    ]);
    const { rows } = await tx.query<HoldRow>(update, params);
    if (rows[0] === undefined) return { won: false, hold: await getHold(tx, holdId) };
    await tx.query("UPDATE tickets SET hold_id = NULL WHERE hold_id = $1", [holdId]);
    return { won: true, hold: toHold(rows[0]) };
  });
}

/**
 * Pay: held → charging and the charge row, in one statement (FS-15): a hold is charging iff
 * its charge is queued. Before the deadline only; the loser gets the hold as it is now.
 */
export async function startCharge(
  db: Database,
  input: { holdId: string; nowMs: number },
): Promise<TransitionOutcome> {
  const rule = HOLD_TRANSITIONS.pay;
  const { rows } = await db.query<HoldRow>(
    `WITH charging AS (
       UPDATE holds SET state = $2, updated_at = $4
        WHERE id = $1 AND state = $3 AND expires_at > $4
        RETURNING ${HOLD_COLUMNS}
     ), queued AS (
       INSERT INTO charges (hold_id, sale_id, amount_minor, currency, step, enqueued_at, next_attempt_at)
       SELECT c.id, c.sale_id, s.price_minor * c.quantity, s.currency, 'charge', $4, $4
         FROM charging c JOIN sales s ON s.id = c.sale_id
     )
     SELECT * FROM charging`,
    [input.holdId, rule.to, rule.from, new Date(input.nowMs)],
  );
  return rows[0] === undefined
    ? { won: false, hold: await getHold(db, input.holdId) }
    : { won: true, hold: toHold(rows[0]) };
}

export interface OrderView {
  readonly paymentId: string;
  readonly amountMinor: bigint;
  readonly createdAtMs: number;
}

export async function getOrder(db: Queryable, holdId: string): Promise<OrderView | undefined> {
  const { rows } = await db.query<{ payment_id: string; amount_minor: bigint; created_at: Date }>(
    "SELECT payment_id, amount_minor, created_at FROM orders WHERE hold_id = $1",
    [holdId],
  );
  const r = rows[0];
  return r && { paymentId: r.payment_id, amountMinor: r.amount_minor, createdAtMs: r.created_at.getTime() };
}

export async function countHoldsByState(db: Queryable): Promise<Record<HoldState, number>> {
  const { rows } = await db.query<{ state: HoldState; n: bigint }>(
    "SELECT state, count(*) AS n FROM holds GROUP BY state",
  );
  const counts: Record<HoldState, number> = { held: 0, charging: 0, paid: 0, released: 0 };
  for (const r of rows) counts[r.state] = Number(r.n);
  return counts;
}

export type CompleteOutcome = { kind: "paid"; hold: Hold } | { kind: "not-charging"; hold: Hold | undefined };

/**
 * The order write after an approved charge: charging → paid, the order and one order_tickets
 * row per number — whose primary key (FS-10) refuses a number sold twice, whatever happened
 * upstream. A unique violation is rethrown: the charge needs compensation (FS-18).
 */
export async function completeOrder(
  db: Database,
  input: { holdId: string; paymentId: string; amountMinor: bigint; nowMs: number },
): Promise<CompleteOutcome> {
  const rule = HOLD_TRANSITIONS.approved;
  // One statement: the transition, the order and its tickets commit together or not at all.
  const { rows } = await db.query<HoldRow>(
    `WITH paid AS (
       UPDATE holds SET state = $2, updated_at = $6 WHERE id = $1 AND state = $3 RETURNING ${HOLD_COLUMNS}
     ), ordered AS (
       INSERT INTO orders (hold_id, sale_id, buyer, payment_id, amount_minor, created_at)
       SELECT id, sale_id, buyer, $4, $5, $6 FROM paid RETURNING hold_id
     ), sold AS (
       INSERT INTO order_tickets (sale_id, number, hold_id)
       SELECT paid.sale_id, n, ordered.hold_id FROM paid JOIN ordered ON ordered.hold_id = paid.id, unnest(paid.numbers) AS n
     )
     SELECT * FROM paid`,
    [input.holdId, rule.to, rule.from, input.paymentId, input.amountMinor, new Date(input.nowMs)],
  );
  const row = rows[0];
  if (row === undefined) return { kind: "not-charging", hold: await getHold(db, input.holdId) };
  return { kind: "paid", hold: toHold(row) };
}

export interface Recomputed {
  readonly epoch: number;
  readonly available: number;
  /** Charging holds still counted as taken: carried into Redis's new sorted set. */
  readonly carried: { holdId: string; quantity: number }[];
  /** Held holds the lost Redis knew about, treated as expired (FS-11). */
  readonly lost: number;
}

/**
 * FS-11: the stock from the truth after Redis lost it. Under the sale row's lock, a new epoch;
 * every `held` hold released as `lost` (its buyer asks for a new one); available = free ticket
 * rows; `restore` writes Redis before the commit, so a writer waiting on the lock sees both.
 */
export async function recomputeStock(
  db: Database,
  saleId: string,
  nowMs: number,
  restore: (recomputed: Recomputed) => Promise<unknown>,
): Promise<Recomputed | undefined> {
  return db.transaction(async (tx) => {
    const sale = await tx.query<{ stock_epoch: bigint }>(
      "UPDATE sales SET stock_epoch = stock_epoch + 1 WHERE id = $1 RETURNING stock_epoch",
      [saleId],
    );
    if (sale.rows[0] === undefined) return undefined;
    const epoch = Number(sale.rows[0].stock_epoch);
    const lost = await tx.query<{ id: string }>(
      `UPDATE holds SET state = 'released', release_reason = 'lost', updated_at = $2
        WHERE sale_id = $1 AND state = 'held' RETURNING id`,
      [saleId, new Date(nowMs)],
    );
    if (lost.rows.length > 0) {
      await tx.query("UPDATE tickets SET hold_id = NULL WHERE sale_id = $1 AND hold_id = ANY($2::text[])", [
        saleId,
        lost.rows.map((r) => r.id),
      ]);
    }
    const charging = await tx.query<{ id: string; quantity: number }>(
      "SELECT id, quantity FROM holds WHERE sale_id = $1 AND state = 'charging' ORDER BY id",
      [saleId],
    );
    const free = await tx.query<{ n: bigint }>(
      "SELECT count(*) AS n FROM tickets WHERE sale_id = $1 AND hold_id IS NULL",
      [saleId],
    );
    const recomputed: Recomputed = {
      epoch,
      available: Number(free.rows[0]!.n),
      carried: charging.rows.map((r) => ({ holdId: r.id, quantity: r.quantity })),
      lost: lost.rows.length,
    };
    await restore(recomputed);
    return recomputed;
  });
}

export interface SaleAudit {
  readonly tickets: number;
  /** Ticket rows bound to a hold (live or paid). */
  readonly bound: number;
  readonly orders: number;
  readonly soldTickets: number;
  /** Numbers in more than one order: FS-10 says 0, always. */
  readonly duplicateNumbers: number;
  readonly holdsByState: Record<HoldState, number>;
  /** Ticket rows bound to a hold that is released: a leak, always 0. */
  readonly leaked: number;
}

/** Every count the sale's invariants are stated in, read in one snapshot. */
export async function auditSale(db: Database, saleId: string): Promise<SaleAudit> {
  return db.transaction(
    async (tx) => {
      const one = async (sql: string) => Number((await tx.query<{ n: bigint }>(sql, [saleId])).rows[0]!.n);
      const states = await tx.query<{ state: HoldState; n: bigint }>(
        "SELECT state, count(*) AS n FROM holds WHERE sale_id = $1 GROUP BY state",
        [saleId],
      );
      const holdsByState: Record<HoldState, number> = { held: 0, charging: 0, paid: 0, released: 0 };
      for (const r of states.rows) holdsByState[r.state] = Number(r.n);
      const audit: SaleAudit = {
        tickets: await one("SELECT count(*) AS n FROM tickets WHERE sale_id = $1"),
        bound: await one("SELECT count(*) AS n FROM tickets WHERE sale_id = $1 AND hold_id IS NOT NULL"),
        orders: await one("SELECT count(*) AS n FROM orders WHERE sale_id = $1"),
        soldTickets: await one("SELECT count(*) AS n FROM order_tickets WHERE sale_id = $1"),
        duplicateNumbers: await one(
          "SELECT count(*) AS n FROM (SELECT number FROM order_tickets WHERE sale_id = $1 GROUP BY number HAVING count(*) > 1) d",
        ),
        holdsByState,
        leaked: await one(
          "SELECT count(*) AS n FROM tickets t JOIN holds h ON h.id = t.hold_id WHERE t.sale_id = $1 AND h.state = 'released'",
        ),
      };
      assert(audit.soldTickets <= audit.tickets, "never more sold than exist");
      return audit;
    },
    { isolation: "repeatable read" },
  );
}
