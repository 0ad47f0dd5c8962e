/**
 * The bench's end-to-end sale (issue 17: "the 100k/5k scenario end to end"): `entrants` join
 * the Redis waiting room's pre-queue before the sale opens (randomised positions at the
 * opening, drawn in chunks), the room admits under the configured capacity (80% of it, a
 * bounded carry) under its cap on active entrants, each
 * admitted entrant reserves one ticket through the production checkout (the reserve script
 * batched across callers, then the hold in PostgreSQL) and leaves its slot. Measured: time
 * from the opening to the last ticket held, checkout arrivals per second against the
 * configured capacity (every second), and the waiting-time estimate's error (FS-20): a sample
 * of entrants asks its admission at the opening (position, estimated wait) and the driver
 * notes when "serving up to P" reached each.
 *
 * The driver stands in for the pages: it polls the global status every `STEP_MS`, as each page
 * does (one answer for all, as a CDN would serve it), and reads who stands at the positions
 * just served from the room's order list (each page knows its own position; 100,000 pages
 * asking for it are not the subject here). Not included: charging (the payments side is
 * FS-15's), and the acquirer's arrivals.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { RedisClient } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { benchLog } from "@casebook/lab/bench-main";
import { type BenchResult, type BenchRowInput, benchRow } from "@casebook/lab/bench-report";
import { Checkout } from "../src/domain/checkout.ts";
import type { RoomSale } from "../src/domain/room-port.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { RedisRooms, roomIncludesDir, roomKeys, roomScriptsDir } from "../src/store/redis-rooms.ts";
import { auditSale, createSale } from "../src/store/sale-repository.ts";
import { type StockStore, stockKeys } from "../src/store/stock-store.ts";

const SYSTEM = "flash-sale";
/** The driver's poll of "serving up to P" and the room's tick. */
const STEP_MS = 100;
/** Joins in flight at once. */
const JOIN_CONCURRENCY = 200;
/** Entrants whose estimate is compared with their admission. */
const ESTIMATE_SAMPLE = 500;
/** The room admits at this share of checkout's capacity… */
const ROOM_RATE_SHARE = 0.8;
/** …and keeps at most this much credit across a late step: 0.8 · (1 + 0.25) = 1. */
const ROOM_CARRY_MS = 250;
/** The sale must sell out within this, or the run stops and says so. */
const MAX_SELL_OUT_MS = 300_000;

export interface EndToEndArgs {
  entrants: number;
  tickets: number;
  /** Checkout's configured capacity: the room's admissions per second. */
  capacityPerS: number;
}

export async function saleEndToEnd(
  t: { redis: RedisClient; db: Database; batched: StockStore },
  args: EndToEndArgs,
): Promise<BenchResult[]> {
  const saleId = `e2e-${randomBytes(4).toString("hex")}`;
  const nowMs = Date.now();
  const sale = await createSale(
    t.db,
    {
      id: saleId,
      name: "bench end to end",
      tickets: args.tickets,
      perBuyerMax: 1,
      holdTtlMs: 600_000,
      priceMinor: 5_000n,
      currency: "BRL",
      opensAtMs: nowMs,
    },
    nowMs,
  );
  if (sale === undefined) throw new Error(`sale ${saleId} exists`);
  await t.batched.restore(saleId, {
    epoch: sale.stockEpoch,
    available: args.tickets,
    carried: [],
    recheckMs: 600_000,
  });
  const ledger = new HoldLedger({ db: t.db, stock: t.batched, clock: systemClock, recheckMs: 600_000 });
  const checkout = new Checkout({
    stock: t.batched,
    ledger,
    newHoldId: () => `h_${randomBytes(12).toString("hex")}`,
    clock: systemClock,
  });
  const registry = await ScriptRegistry.fromDir(roomScriptsDir, { includesDir: roomIncludesDir });
  await registry.loadAll(t.redis);
  const rooms = new RedisRooms(new RedisScriptRunner(t.redis, registry), {
    // Headroom under checkout's capacity, and a bounded carry: no second above admitPerS ·
    // (1 + carry) + 1 = capacity, however late the driver's steps (waiting-room.ts carryMs).
    admitPerS: args.capacityPerS * ROOM_RATE_SHARE,
    carryMs: ROOM_CARRY_MS,
    // Slots for about a second of admissions: each is freed as soon as its reservation answers.
    maxActive: Math.ceil(args.capacityPerS),
    graceMs: 30_000,
    sessionMs: 600_000,
    maxEntrants: args.entrants,
  });
  const closed: RoomSale = { saleId, opensAtMs: Date.now() + 3_600_000 };
  const open: RoomSale = { saleId, opensAtMs: 0 };
  try {
    benchLog(`${SYSTEM} bench: ${args.entrants} entrants join the pre-queue`);
    const joinStarted = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: JOIN_CONCURRENCY }, async () => {
        for (let i = next++; i < args.entrants; i = next++)
          await rooms.join(closed, `u${i}`, { binding: "b", draw: Math.random() });
      }),
    );
    const joinS = (performance.now() - joinStarted) / 1_000;

    benchLog(`${SYSTEM} bench: the sale opens; ${args.tickets} tickets at ${args.capacityPerS}/s`);
    const openedMs = performance.now();
    const second = () => Math.floor((performance.now() - openedMs) / 1_000);
    const arrivalsPerS: number[] = [];
    let held = 0;
    let soldOutMs: number | undefined;
    let drawnMs: number | undefined;
    let drawCalls = 0;
    const inFlight = new Set<Promise<void>>();
    const buy = async (entrant: string) => {
      const s = second();
      arrivalsPerS[s] = (arrivalsPerS[s] ?? 0) + 1;
      const r = await checkout.reserve({ saleId, buyer: entrant, quantity: 1, holdTtlMs: 600_000 });
      if (r.kind === "held" && ++held === args.tickets) soldOutMs = performance.now() - openedMs;
      await rooms.leave(open, entrant);
    };
    // The opening: status calls until the whole pre-queue has positions (chunks of 1,000).
    let status = await rooms.status(open);
    drawCalls += 1;
    /** Sampled entrants: estimated wait at the opening's end, and when P reached them. */
    const sample = new Map<
      string,
      { position: number; estimateMs: number; askedMs: number; admittedMs?: number }
    >();
    let served = 0;
    while (soldOutMs === undefined && performance.now() - openedMs < MAX_SELL_OUT_MS) {
      if (drawnMs === undefined) {
        if (status.lastPosition >= args.entrants) {
          drawnMs = performance.now() - openedMs;
          await takeSample(rooms, t.redis, open, args, sample);
        } else {
          status = await rooms.status(open);
          drawCalls += 1;
          continue;
        }
      }
      await rooms.tick(open);
      status = await rooms.status(open);
      const nowAt = performance.now();
      for (const s of sample.values())
        if (s.admittedMs === undefined && s.position <= status.servingUpTo) s.admittedMs = nowAt;
      if (status.servingUpTo > served) {
        const entrants = await t.redis.lrange(roomKeys(saleId)[2]!, served, status.servingUpTo - 1);
        served = status.servingUpTo;
        for (const entrant of entrants) {
          const p = buy(entrant);
          inFlight.add(p);
          void p.finally(() => inFlight.delete(p));
        }
      }
      await sleep(STEP_MS);
    }
    await Promise.allSettled([...inFlight]);
    const audit = await auditSale(t.db, saleId);
    if (audit.bound > args.tickets) throw new Error(`oversold: ${audit.bound} of ${args.tickets}`);
    return rowsOf(args, {
      joinS,
      drawnMs,
      drawCalls,
      soldOutMs,
      arrivalsPerS,
      sample,
      held,
      bound: audit.bound,
    });
  } finally {
    await t.redis.del(...roomKeys(saleId));
    const k = stockKeys(saleId);
    await t.redis.del(k.stock, k.holds, k.quantities);
  }
}

/**
 * Entrants at positions spread uniformly over those that will buy (1..tickets) ask their
 * admission once, as their page does: position and estimated wait. (Who stands at a position
 * is read from the room's order list: the driver's shortcut for "each page knows its own".)
 */
async function takeSample(
  rooms: RedisRooms,
  redis: RedisClient,
  sale: RoomSale,
  args: EndToEndArgs,
  sample: Map<string, { position: number; estimateMs: number; askedMs: number }>,
): Promise<void> {
  for (let k = 0; k < ESTIMATE_SAMPLE; k++) {
    const position = 1 + Math.floor(Math.random() * args.tickets);
    const entrant = await redis.lindex(roomKeys(sale.saleId)[2]!, position - 1);
    if (entrant === null || sample.has(entrant)) continue;
    const a = await rooms.admit(sale, entrant, "b");
    if (a.kind === "waiting")
      sample.set(entrant, {
        position: a.position,
        estimateMs: a.estimatedWaitMs,
        askedMs: performance.now(),
      });
  }
}

function rowsOf(
  args: EndToEndArgs,
  r: {
    joinS: number;
    drawnMs: number | undefined;
    drawCalls: number;
    soldOutMs: number | undefined;
    arrivalsPerS: number[];
    sample: Map<string, { position: number; estimateMs: number; askedMs: number; admittedMs?: number }>;
    held: number;
    bound: number;
  },
): BenchResult[] {
  const scenario = `${args.entrants.toLocaleString("en")} entrants, ${args.tickets.toLocaleString("en")} tickets, Redis room + checkout, capacity ${args.capacityPerS}/s`;
  const row = (metric: string, unit: string, value: number, extra: Partial<BenchRowInput> = {}) =>
    benchRow({ system: SYSTEM, scenario, metric, unit, value, ...extra });
  const perS = Array.from(r.arrivalsPerS, (n) => n ?? 0);
  // The last second is partial: its count is not a rate.
  const whole = perS.slice(0, Math.max(1, perS.length - 1));
  const errors = [...r.sample.values()]
    .filter((s) => s.admittedMs !== undefined)
    .map((s) => Math.abs(s.admittedMs! - s.askedMs - s.estimateMs))
    .sort((a, b) => a - b);
  const q = (p: number) => errors[Math.min(errors.length - 1, Math.floor(p * errors.length))] ?? 0;
  return [
    row("joins (pre-queue)", "/s", args.entrants / r.joinS),
    row(`pre-queue drawn in ${r.drawCalls} chunked script calls`, "ms", r.drawnMs ?? -1),
    row("time to sell out, from the opening", "s", r.soldOutMs === undefined ? -1 : r.soldOutMs / 1_000),
    row("checkout arrivals, busiest whole second", "/s", Math.max(...whole), {
      direction: "lower-is-better",
      words: ["below", "above"],
      peer: { name: "configured capacity", value: args.capacityPerS },
    }),
    row("checkout arrivals, mean until sold out", "/s", r.held / Math.max(1e-9, (r.soldOutMs ?? 1) / 1_000)),
    row("whole seconds above capacity", "count", whole.filter((n) => n > args.capacityPerS).length, {
      direction: "lower-is-better",
    }),
    row(`estimate's error |admitted − estimated|, p50 of ${errors.length} sampled`, "ms", q(0.5)),
    row(`estimate's error |admitted − estimated|, p95 of ${errors.length} sampled`, "ms", q(0.95)),
    row("tickets held", "count", r.held, { direction: "higher-is-better" }),
    row(
      "tickets bound in PostgreSQL beyond the stock (oversold)",
      "count",
      Math.max(0, r.bound - args.tickets),
      {
        direction: "lower-is-better",
      },
    ),
  ];
}
