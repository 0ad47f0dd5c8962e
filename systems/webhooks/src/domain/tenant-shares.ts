/**
 * How many due deliveries each tenant may claim in one round (WH-15, WH-21): weighted fair
 * shares of the round's claim slots among the tenants that have due work, carried across
 * rounds as in deficit round robin.
 *
 * Each round the slots are divided by weight with water-filling: a tenant that has less
 * due than its weighted share gets all it has, and what it leaves is divided among the
 * others by weight again — fair AND work-conserving: a flooding tenant gets all the room
 * nobody else wants, and only that. Shares are real numbers; slots are whole. Each tenant
 * keeps a credit (its share not yet served, within ±1 slot): whole credits become slots,
 * and the slots left over go to the largest remainders. So over rounds every tenant gets
 * its share exactly, and with more tenants than slots each still gets its turn (30
 * tenants, 10 slots a round: each claims one slot every 3 rounds).
 *
 * A tenant with nothing due loses its credit (DRR: an empty queue keeps no deficit), so
 * idling never banks a burst. Credits live in a map bounded by MAX_TENANTS.
 *
 * @example
 * const shares = new TenantShares();
 * shares.split([{ tenantId: "a", weight: 1, due: 10_000 }, { tenantId: "b", weight: 1, due: 7 }], 100);
 * // Map { "a" => 93, "b" => 7 }
 */

export interface TenantDemand {
  tenantId: string;
  /** Share of capacity, 1..MAX_WEIGHT (tenants.weight). */
  weight: number;
  /** Due deliveries (dueCountsByTenant's capped count). */
  due: number;
}

/** Tenants whose carried credit is remembered; beyond it, credit restarts at zero. */
export const MAX_TENANTS = 100_000;
const MAX_WEIGHT = 1_000;

function checkDemand(d: TenantDemand): void {
  if (!Number.isInteger(d.weight) || d.weight < 1 || d.weight > MAX_WEIGHT)
    throw new RangeError(`weight of tenant ${d.tenantId} must be 1..${MAX_WEIGHT}, got ${d.weight}`);
  if (!Number.isSafeInteger(d.due) || d.due < 0)
    throw new RangeError(`due of tenant ${d.tenantId} must be an integer >= 0, got ${d.due}`);
}

interface Turn {
  readonly tenantId: string;
  readonly weight: number;
  readonly due: number;
  /** Weighted fair share of this round, in slots (real). */
  share: number;
  /** Carried credit plus this round's share. */
  credit: number;
  granted: number;
}

/** Water-filling: shares by weight, no tenant above its due, `total` slots in all. */
function fairShares(turns: Turn[], total: number): void {
  let left = total;
  let open = turns;
  // Each pass caps at least one tenant or settles everyone: at most turns.length passes.
  while (open.length > 0) {
    const weights = open.reduce((sum, t) => sum + t.weight, 0);
    const level = left / weights;
    const capped = open.filter((t) => t.due <= level * t.weight);
    if (capped.length === 0) {
      for (const t of open) t.share = level * t.weight;
      return;
    }
    for (const t of capped) {
      t.share = t.due;
      left -= t.due;
    }
    open = open.filter((t) => t.due > level * t.weight);
  }
}

export class TenantShares {
  readonly #credit = new Map<string, number>();
  #round = 0;

  /**
   * Splits `room` claim slots among `demands`; tenants granted nothing are absent from the
   * result. The sum is min(room, Σ due): no idle slot while work is due, no tenant above
   * its due.
   */
  split(demands: readonly TenantDemand[], room: number): Map<string, number> {
    if (!Number.isSafeInteger(room) || room < 0) throw new RangeError(`room must be an integer >= 0`);
    for (const d of demands) checkDemand(d);
    const turns = this.#turns(demands);
    const total = Math.min(
      room,
      turns.reduce((sum, t) => sum + t.due, 0),
    );
    fairShares(turns, total);
    let left = total;
    for (const t of turns) {
      t.credit += t.share;
      t.granted = Math.max(0, Math.min(Math.floor(t.credit), t.due));
      left -= t.granted;
    }
    // Slots the whole credits left over go to the largest remainders (ties: this round's order).
    const byRemainder = turns
      .filter((t) => t.granted < t.due)
      .sort((a, b) => b.credit - b.granted - (a.credit - a.granted));
    for (let i = 0; left > 0 && byRemainder.length > 0; i = (i + 1) % byRemainder.length) {
      const t = byRemainder[i]!;
      if (t.granted < t.due) {
        t.granted += 1;
        left -= 1;
      }
    }
    return this.#settle(turns);
  }

  /** Tenants with due work in this round's order: rotated each round so ties move around. */
  #turns(demands: readonly TenantDemand[]): Turn[] {
    const due = demands.filter((d) => d.due > 0);
    const live = new Set(due.map((d) => d.tenantId));
    for (const id of this.#credit.keys()) if (!live.has(id)) this.#credit.delete(id);
    const start = due.length === 0 ? 0 : this.#round++ % due.length;
    const ordered = [...due.slice(start), ...due.slice(0, start)];
    return ordered.map((d) => ({
      tenantId: d.tenantId,
      weight: d.weight,
      due: d.due,
      share: 0,
      credit: this.#credit.get(d.tenantId) ?? 0,
      granted: 0,
    }));
  }

  #settle(turns: readonly Turn[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const t of turns) {
      if (t.granted > 0) out.set(t.tenantId, t.granted);
      // Served all it had due: no credit kept. Otherwise what is owed (or overpaid), within a slot.
      const keep = t.granted >= t.due ? 0 : Math.max(-1, Math.min(1, t.credit - t.granted));
      if (keep === 0 || (this.#credit.size >= MAX_TENANTS && !this.#credit.has(t.tenantId)))
        this.#credit.delete(t.tenantId);
      else this.#credit.set(t.tenantId, keep);
    }
    return out;
  }
}
