/**
 * The bench's drain-ceiling scenario (FS-15): the charge queue drained against the real
 * payments service at rising configured rates until payments cannot keep up — a step whose
 * rate doubled drains less than 10% more than the step before — beside payments' own saga
 * throughput measured in the same run
 * (`POST /v1/payments` straight at it, closed loop, before and after the steps: the better
 * of the two). Payments runs as its own process on the bench's PostgreSQL in a schema of its
 * own, its acquirer simulator as its own process (5 ms a call); each step queues rate ×
 * `seconds` charges on a sale of its own and drains them with one ChargeWorker. A step cannot
 * reach its configured rate R even when payments keeps up: the worker's ProcessorWindow holds
 * each permit a second past its call (so at most R land at the acquirer in any second), which
 * bounds the drain at R / (1 s + the mean call latency) — printed beside each step.
 *
 * @example
 * const rows = await drainCeiling({ db, stock }, { pgUrl, rates: [10, 20, 40], seconds: 8, maxInFlight: 16, sagaClients: 16, sagaMs: 8_000 });
 */
import { readFileSync } from "node:fs";
import { benchLog } from "@casebook/lab/bench-main";
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
import { drainAtRate, type FlashStores, sagaThroughput } from "./charge-drain.ts";
import { startPaymentsDeployment } from "./payments-deployment.ts";

const SYSTEM = "flash-sale";
/** Payments keeps up while doubling the rate drains at least this much more than the step before. */
const MIN_GAIN = 1.1;

export interface DrainCeilingArgs {
  pgUrl: string;
  /** Configured charge rates, rising; the run stops after the first that does not keep up. */
  rates: readonly number[];
  /** Each step's charges: rate × seconds (at least 50). */
  seconds: number;
  maxInFlight: number;
  sagaClients: number;
  /** How long each saga measurement runs (its first eighth a warmup). */
  sagaMs: number;
}

function loadAverage(): string {
  return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
}

export async function drainCeiling(f: FlashStores, args: DrainCeilingArgs): Promise<BenchResult[]> {
  benchLog(`drain ceiling: starting payments and its acquirer (load ${loadAverage()})`);
  const payments = await startPaymentsDeployment({ pgUrl: args.pgUrl, acquirerLatencyMs: 5 });
  const rows: BenchResult[] = [];
  try {
    const sagaOptions = {
      clients: args.sagaClients,
      durationMs: args.sagaMs,
      warmupMs: Math.round(args.sagaMs / 8),
    };
    const sagaBefore = await sagaThroughput(payments, sagaOptions);
    benchLog(
      `payments' saga, closed loop c=${args.sagaClients}: ${sagaBefore.perS.toFixed(1)}/s (load ${loadAverage()})`,
    );
    let ceiling = { ratePerS: 0, drainedPerS: 0, p99Ms: 0 };
    let previous = 0;
    for (const ratePerS of args.rates) {
      const charges = Math.max(50, Math.round(ratePerS * args.seconds));
      benchLog(
        `drain at ${ratePerS}/s: ${charges} charges, ${args.maxInFlight} in flight (load ${loadAverage()})`,
      );
      const step = await drainAtRate(f, payments, {
        saleId: `drain_${ratePerS}_${Date.now()}`,
        ratePerS,
        charges,
        maxInFlight: args.maxInFlight,
      });
      if (step.orders !== charges || step.authorizations !== charges || step.authorizationCalls !== charges)
        throw new Error(`drain at ${ratePerS}/s: ${JSON.stringify(step)} — not one charge per order`);
      const scenario = `charge queue → payments at a configured ${ratePerS}/s, ${charges} charges, ${args.maxInFlight} in flight`;
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario,
          metric: "charges sustained",
          unit: "/s",
          value: step.drainedPerS,
          peer: { name: "configured rate", value: ratePerS },
        }),
        benchRow({
          system: SYSTEM,
          scenario,
          metric: "the window's bound R / (1 s + mean call)",
          unit: "/s",
          value: ratePerS / (1 + step.meanMs / 1_000),
        }),
        benchRow({ system: SYSTEM, scenario, metric: "p99 of a charge call", unit: "ms", value: step.p99Ms }),
        benchRow({
          system: SYSTEM,
          scenario,
          metric: "acquirer authorizations, busiest second",
          unit: "/s",
          value: step.busiestSecond.authorizations,
          peer: { name: "configured rate", value: ratePerS },
          direction: "lower-is-better",
        }),
      );
      benchLog(
        `  ${step.drainedPerS.toFixed(1)}/s sustained, p99 ${step.p99Ms.toFixed(0)} ms, busiest second ${step.busiestSecond.authorizations}, retried ${step.retried} (load ${loadAverage()})`,
      );
      if (step.drainedPerS > ceiling.drainedPerS)
        ceiling = { ratePerS, drainedPerS: step.drainedPerS, p99Ms: step.p99Ms };
      if (previous > 0 && step.drainedPerS < MIN_GAIN * previous) break;
      previous = step.drainedPerS;
    }
    const sagaAfter = await sagaThroughput(payments, sagaOptions);
    benchLog(`payments' saga again: ${sagaAfter.perS.toFixed(1)}/s (load ${loadAverage()})`);
    const saga = sagaAfter.perS > sagaBefore.perS ? sagaAfter : sagaBefore;
    const sagaScenario = `payments' saga: POST /v1/payments straight at it, closed loop c=${args.sagaClients} (best of before/after)`;
    rows.push(
      benchRow({ system: SYSTEM, scenario: sagaScenario, metric: "payments", unit: "/s", value: saga.perS }),
      benchRow({ system: SYSTEM, scenario: sagaScenario, metric: "p99", unit: "ms", value: saga.p99Ms }),
      benchRow({
        system: SYSTEM,
        scenario: `drain ceiling: the best step (at a configured ${ceiling.ratePerS}/s)`,
        metric: "charges sustained",
        unit: "/s",
        value: ceiling.drainedPerS,
        peer: { name: "payments' saga, closed loop", value: saga.perS },
      }),
    );
  } finally {
    await payments.close();
  }
  return rows;
}
