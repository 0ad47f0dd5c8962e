/**
 * The console's FS-16 scenario as a load run (the README's table is the model's,
 * src/domain/arrival-scenario.ts): the same arrival curve — 20× checkout's capacity in the
 * first second, decaying — against two checkouts side by side, at the same time, one with the
 * waiting room in front and one without. Everything is the run's own: two sales made for it in
 * this service's store (as the sale-race scenario makes one), a private in-process waiting room
 * (`InProcessRooms`, not the service's rooms), two checkout gates (checkout-gate.ts: at most
 * `capacityPerS` a second, a request over it waits until its client gives up).
 *
 * Client model, stated (the model's, scaled to the run's bound): without the room a client
 * asks checkout; not let through within `timeoutMs`, it tries again after full-jitter backoff
 * (uniform in [0, backoffBaseMs · 2^k) on its k-th retry), at most `retriesMax` retries, then
 * gives up. With the room it joins (one position), the run polls the global "serving up to P"
 * like the page does and each entrant whose position ≤ P fetches its admission, then asks
 * checkout once (admitted entrants arrive at the room's rate, below capacity: they are not
 * made to wait) and leaves the room. The room admits at `admitShare` of capacity, keeping at
 * most two steps' credit across a late step (`carryMs`): the headroom WaitingRoomConfig asks for. Whoever checkout lets through reserves one ticket for real
 * (`Checkout.reserve`: the script, then the hold in SQL).
 *
 * The plot: arrivals/s, and checkout arrivals/s (every try) with and without the room, against
 * the capacity line. Bounded: arrivals for `arrivalsMs`, the whole for `runMs`; clients still
 * waiting then are counted as such; gates, room and timers stopped in every case.
 *
 * @example
 * new ScenarioRuns([arrivalCurveScenario({ db, stock, checkout, recheckMs })]);
 */
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import type { Checkout } from "../domain/checkout.ts";
import type { RoomSale } from "../domain/room-port.ts";
import { InProcessRooms } from "../store/in-process-rooms.ts";
import { createSale } from "../store/sale-repository.ts";
import type { StockStore } from "../store/stock-store.ts";
import { CheckoutGate } from "./checkout-gate.ts";

export const ARRIVAL_CURVE_ID = "waiting-room-on-off";

export interface ArrivalCurveDeps {
  db: Database;
  stock: StockStore;
  checkout: Checkout;
  recheckMs: number;
  /** Checkout's capacity. Default 20/s. */
  capacityPerS?: number;
  /** First second's arrivals as a multiple of capacity (FS-16). Default 20. */
  peakFactor?: number;
  /** Second t brings peak · e^(−t / decayMs). Default 1 500 ms. */
  decayMs?: number;
  /** Arrivals come for this long. Default 10 000 ms. */
  arrivalsMs?: number;
  /** The whole run, arrivals included. Default 30 000 ms. */
  runMs?: number;
  /** Client model: give up on a try after this. Default 1 000 ms. */
  timeoutMs?: number;
  /** Client model: full-jitter backoff base. Default 1 000 ms. */
  backoffBaseMs?: number;
  /** Client model: retries before giving up. Default 4. */
  retriesMax?: number;
  /** The room admits at this share of capacity: headroom for its ticks' lag. Default 0.8. */
  admitShare?: number;
}

/** Arrivals are spawned, and the room polled and ticked, on this step. */
const STEP_MS = 100;
const HOLD_TTL_MS = 60_000;
/** Requests waiting at one gate, at most (far above what the run offers). */
const MAX_GATE_WAITING = 100_000;

interface Side {
  /** Tries at checkout per second of the run. */
  offered: number[];
  served: number;
  held: number;
  timedOut: number;
  gaveUp: number;
  /** Tries still waiting at checkout when the run ended. */
  atEnd: number;
}

function newSide(seconds: number): Side {
  return { offered: new Array(seconds).fill(0), served: 0, held: 0, timedOut: 0, gaveUp: 0, atEnd: 0 };
}

async function saleFor(deps: ArrivalCurveDeps, label: string, tickets: number): Promise<string> {
  const nowMs = Date.now();
  const id = `scenario-${label}-${randomBytes(6).toString("hex")}`;
  const sale = await createSale(
    deps.db,
    {
      id,
      name: `scenario FS-16: ${label}`,
      tickets,
      perBuyerMax: 1,
      holdTtlMs: HOLD_TTL_MS,
      priceMinor: 5_000n,
      currency: "BRL",
      opensAtMs: nowMs,
    },
    nowMs,
  );
  if (sale === undefined) throw new Error(`sale ${id} exists already`);
  await deps.stock.restore(sale.id, {
    epoch: sale.stockEpoch,
    available: sale.tickets,
    carried: [],
    recheckMs: deps.recheckMs,
  });
  return sale.id;
}

export function arrivalCurveScenario(deps: ArrivalCurveDeps): Scenario {
  const capacityPerS = deps.capacityPerS ?? 20;
  const peakPerS = capacityPerS * (deps.peakFactor ?? 20);
  const decayMs = deps.decayMs ?? 1_500;
  const arrivalsMs = deps.arrivalsMs ?? 10_000;
  const runMs = deps.runMs ?? 30_000;
  const timeoutMs = deps.timeoutMs ?? 1_000;
  const backoffBaseMs = deps.backoffBaseMs ?? 1_000;
  const retriesMax = deps.retriesMax ?? 4;
  const admitPerS = capacityPerS * (deps.admitShare ?? 0.8);
  return {
    id: ARRIVAL_CURVE_ID,
    title: "The same arrivals with and without the waiting room",
    line: `${peakPerS}/s arriving in the first second (20× checkout's ${capacityPerS}/s), decaying, at two checkouts at once — one behind a waiting room, one hit directly by clients that time out and retry: checkout arrivals/s against its capacity (FS-16).`,
    xLabel: "s from the start",
    yLabel: "requests per second",
    run: (ctx) => runScenario(ctx),
  };

  async function runScenario(ctx: ScenarioContext): Promise<string> {
    const seconds = Math.ceil(runMs / 1_000);
    // Every arrival could be served: no sold-out in the way of the load's shape.
    const expected = Math.ceil(peakPerS / (1 - Math.exp(-1_000 / decayMs))) + capacityPerS;
    const [directSale, roomSale] = [
      await saleFor(deps, "direct", expected),
      await saleFor(deps, "room", expected),
    ];
    const direct = new CheckoutGate({ capacityPerS, maxWaiting: MAX_GATE_WAITING });
    const behindRoom = new CheckoutGate({ capacityPerS, maxWaiting: MAX_GATE_WAITING });
    const rooms = new InProcessRooms({
      config: {
        admitPerS,
        maxActive: Math.max(1, Math.ceil(admitPerS)),
        graceMs: 5_000,
        sessionMs: 10_000,
        maxEntrants: expected * 2,
        // A late step loses its credit past two steps' worth instead of admitting a burst:
        // with the 80% rate, no second gets more than 16 · 1.2 + 1 ≈ 20 (waiting-room.ts carryMs).
        carryMs: 2 * STEP_MS,
      },
      clock: systemClock,
      random: systemRandom,
      maxRooms: 1,
    });
    const room: RoomSale = { saleId: roomSale, opensAtMs: 0 };
    const sides = { direct: newSide(seconds), room: newSide(seconds) };
    const arrivalsPerS = new Array<number>(seconds).fill(0);
    const startedMs = performance.now();
    const endMs = startedMs + runMs;
    const secondNow = () => Math.min(seconds - 1, Math.floor((performance.now() - startedMs) / 1_000));
    const running = new Set<Promise<void>>();
    const track = (p: Promise<void>) => {
      running.add(p);
      void p.finally(() => running.delete(p));
    };
    let arrived = 0;
    /** Second t brings peak · e^(−t / decay), spread evenly over it (the model's curve, per second). */
    const arrivalsBy = (atMs: number) => {
      const whole = Math.floor(atMs / 1_000);
      let total = 0;
      for (let t = 0; t < whole; t++) total += peakPerS * Math.exp((-t * 1_000) / decayMs);
      return Math.floor(
        total + ((atMs - whole * 1_000) / 1_000) * peakPerS * Math.exp((-whole * 1_000) / decayMs),
      );
    };
    let maxLine = 0;
    const reserve = async (side: Side, saleId: string, buyer: string) => {
      const r = await deps.checkout.reserve({ saleId, buyer, quantity: 1, holdTtlMs: HOLD_TTL_MS });
      if (r.kind === "held") side.held += 1;
    };

    // Without the room: try, time out, back off, try again — the retries are load too.
    const directClient = async (buyer: string) => {
      for (let k = 0; ; k++) {
        if (performance.now() >= endMs || ctx.signal.aborted) return;
        sides.direct.offered[secondNow()]! += 1;
        const outcome = await direct.enter(timeoutMs);
        if (outcome === "served") {
          sides.direct.served += 1;
          await reserve(sides.direct, directSale, buyer);
          return;
        }
        if (outcome === "stopped") {
          sides.direct.atEnd += 1;
          return;
        }
        sides.direct.timedOut += 1;
        if (k >= retriesMax) {
          sides.direct.gaveUp += 1;
          return;
        }
        await sleep(Math.random() * backoffBaseMs * 2 ** k, undefined, { signal: ctx.signal }).catch(
          () => undefined,
        );
      }
    };

    // With the room: one position at arrival; checkout only once admitted.
    const positions = new Map<string, number>();
    const roomClient = async (buyer: string) => {
      const outcome = await behindRoom.enter(timeoutMs);
      if (outcome === "served") {
        sides.room.served += 1;
        await reserve(sides.room, roomSale, buyer);
      } else if (outcome === "stopped") sides.room.atEnd += 1;
      else sides.room.timedOut += 1;
      await rooms.leave(room, buyer);
    };
    const pollRoom = async () => {
      await rooms.tick(room);
      const { servingUpTo, waiting } = await rooms.status(room);
      maxLine = Math.max(maxLine, waiting);
      for (const [buyer, position] of positions) {
        if (position > servingUpTo) continue;
        positions.delete(buyer);
        // The uncached per-entrant fetch, made only once P reached it (AWS VWR's split).
        const admitted = await rooms.admit(room, buyer, "scenario");
        if (admitted.kind !== "admitted") continue;
        sides.room.offered[secondNow()]! += 1;
        track(roomClient(buyer));
      }
    };

    direct.start();
    behindRoom.start();
    try {
      for (let step = 0; performance.now() < endMs && !ctx.signal.aborted; step++) {
        const atMs = performance.now() - startedMs;
        if (atMs < arrivalsMs) {
          // Everyone due by now arrives now: a late step delays arrivals, never loses them.
          for (const due = arrivalsBy(atMs); arrived < due; ) {
            const buyer = `b${arrived++}`;
            arrivalsPerS[secondNow()]! += 1;
            track(directClient(buyer));
            const joined = await rooms.join(room, buyer, { binding: "scenario" });
            if (joined.kind === "queued") positions.set(buyer, joined.position);
          }
        }
        await pollRoom();
        if (step % (1_000 / STEP_MS) === 0) ctx.progress(Math.min(0.95, atMs / runMs));
        await sleep(STEP_MS, undefined, { signal: ctx.signal }).catch(() => undefined);
      }
    } finally {
      direct.stop();
      behindRoom.stop();
    }
    await Promise.allSettled([...running]);
    for (let s = 0; s < seconds; s++) {
      ctx.point("arrivals/s", s, arrivalsPerS[s]!);
      ctx.point("checkout arrivals/s, without the room", s, sides.direct.offered[s]!);
      ctx.point("checkout arrivals/s, with the room", s, sides.room.offered[s]!);
      ctx.point("checkout capacity", s, capacityPerS);
    }
    ctx.progress(1);
    return sentence({ arrived, arrivalsPerS, capacityPerS, sides, maxLine, waiting: positions.size });
  }
}

function sentence(r: {
  arrived: number;
  arrivalsPerS: number[];
  capacityPerS: number;
  sides: { direct: Side; room: Side };
  maxLine: number;
  waiting: number;
}): string {
  const { capacityPerS: cap, sides } = r;
  const peak = (xs: number[]) => Math.max(0, ...xs);
  const over = (xs: number[]) => xs.filter((x) => x > cap).length;
  const { direct, room } = sides;
  return (
    `${r.arrived} arrivals, ${peak(r.arrivalsPerS)}/s at the peak, checkout's capacity ${cap}/s. ` +
    `Without the room: checkout offered up to ${peak(direct.offered)}/s, over capacity in ${over(direct.offered)} s, ` +
    `${direct.timedOut} tries timed out, ${direct.gaveUp} clients gave up, ${direct.served} served (${direct.held} held), ${direct.atEnd} waiting at checkout at the end. ` +
    `With the room: checkout offered up to ${peak(room.offered)}/s, over capacity in ${over(room.offered)} s, ` +
    `${room.timedOut} tries timed out, ${room.served} served (${room.held} held), no retries; the line up to ${r.maxLine}; at the end ${r.waiting} still in it, ${room.atEnd} waiting at checkout.`
  );
}
