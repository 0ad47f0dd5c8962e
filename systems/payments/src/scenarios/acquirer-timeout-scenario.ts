/**
 * The console's fault scenario for payments (PY-06 shown live): the acquirer times out mid-saga.
 * A world of its own — an in-memory PGlite database with every migration (never this service's
 * store), a PRIVATE acquirer simulator (src/sim) on a free loopback port, the acquirer client, the
 * saga orchestrator and the payment routes (on a Fastify app of the run's, reached by inject, never
 * listening). The simulator is set to charge and then hold its answer (a hung response); the
 * client gives up after `headersTimeoutMs`, so the authorization's outcome is unknown. The payment
 * is answered 202 pending; the orchestrator asks the acquirer for the authorization by the same
 * idempotency key (the status query) before deciding, finds it approved, and captures it.
 *
 * The plot counts, as they happen, the acquirer calls by operation and outcome and the charges the
 * acquirer holds; the sentence gives the payment's states with their times, the calls, and the
 * acquirer's own count: one authorization, one attempt, one capture — no double charge.
 *
 * @example
 * new ScenarioRuns([acquirerTimeoutScenario()]);
 */
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import { createService } from "@casebook/infra/http/service";
import { runMigrations } from "@casebook/infra/sql/migrations";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { registerPaymentRoutes } from "../api/payment-routes.ts";
import { AcquirerClient } from "../clients/acquirer-client.ts";
import { paymentAcquirerKey } from "../domain/derived-keys.ts";
import { paymentsErrorRegistries } from "../errors.ts";
import { createAcquirerSim } from "../sim/acquirer-sim.ts";
import { paymentsIdempotencyStore } from "../store/idempotency-keys.ts";
import { SagaOrchestrator } from "../workers/saga-orchestrator.ts";

export interface AcquirerTimeoutOptions {
  /** How long the client waits for the acquirer's answer before the outcome is unknown. Default 1 500. */
  headersTimeoutMs?: number;
  /** How long the request itself drives the saga before answering 202. Default 200. */
  inlineDriveMs?: number;
  /** Longest wait for the payment's final state. Default 30 000. */
  settleMaxMs?: number;
}

/** How long the simulator holds a lost answer: far beyond the client's patience. */
const HANG_MS = 20_000;
const WATCH_MS = 100;
const FINAL = new Set(["captured", "failed", "voided", "refunded", "unresolved"]);

export function acquirerTimeoutScenario(options: AcquirerTimeoutOptions = {}): Scenario {
  const headersTimeoutMs = options.headersTimeoutMs ?? 1_500;
  const inlineDriveMs = options.inlineDriveMs ?? 200;
  const settleMaxMs = options.settleMaxMs ?? 30_000;
  return {
    id: "acquirer-timeout",
    title: "The acquirer times out mid-saga",
    line: `A private acquirer charges the card and never answers; after ${headersTimeoutMs / 1_000} s the outcome is unknown: the payment stays pending, the saga asks the acquirer's status by the same key, then captures — one charge.`,
    xLabel: "s from the request",
    yLabel: "count",
    run: async (ctx) => {
      const { signal } = ctx;
      const held: { close(): unknown }[] = [];
      const close = async () => {
        for (const h of held.reverse()) await Promise.allSettled([h.close()]);
      };
      try {
        const db = await openDatabase({ system: "payments", dataDir: "memory://", env: {} });
        held.push({ close: () => db.close() });
        await runMigrations(db, { dir: new URL("../store/migrations/", import.meta.url) });
        const sim = createAcquirerSim({
          rng: systemRandom,
          log: { level: "silent" },
          defaultMetrics: false,
          behaviour: { timeoutMode: "hang", hangMs: HANG_MS },
        });
        held.push({ close: () => sim.close() });
        const { url } = await sim.listen({ port: 0, host: "127.0.0.1" });
        ctx.progress(0.1); // the private database is migrated and the acquirer listens
        const t0Ms = Date.now();
        const at = () => Math.round(Date.now() - t0Ms) / 1_000;
        const calls = new Map<string, number>();
        const callLog: string[] = [];
        const acquirer = new AcquirerClient({
          baseUrl: url,
          clock: systemClock,
          random: systemRandom,
          timeouts: { connectMs: 1_000, headersMs: headersTimeoutMs, bodyMs: 1_000 },
          callDeadlineMs: headersTimeoutMs + 2_000,
          retryBaseMs: 50,
          retryCapMs: 200,
          observer: {
            callFinished: (operation, outcome) => {
              const series = `acquirer calls: ${operation} → ${outcome}`;
              calls.set(series, (calls.get(series) ?? 0) + 1);
              callLog.push(`${operation} ${outcome} at ${at().toFixed(1)} s`);
              ctx.point(series, at(), calls.get(series)!);
            },
          },
        });
        held.push({ close: () => acquirer.close() });
        const idempotency = paymentsIdempotencyStore(db, { clock: systemClock });
        const orchestrator = new SagaOrchestrator({
          db,
          acquirer,
          idempotency,
          clock: systemClock,
          random: systemRandom,
          owner: `scenario-${randomUUID().slice(0, 8)}`,
          pollIntervalMs: 50,
          backoff: { baseMs: 200, capMs: 1_000 },
        });
        orchestrator.start();
        held.push({ close: () => orchestrator.stop() });
        const service = createService({
          name: "payments-scenario",
          version: "0.0.0",
          log: { level: "silent" },
          errors: paymentsErrorRegistries,
          defaultMetrics: false,
        });
        held.push({ close: () => service.close() });
        const merchant = `scenario-${randomUUID().slice(0, 8)}`;
        registerPaymentRoutes(service.app, {
          db,
          idempotency,
          orchestrator,
          acquirer,
          clock: systemClock,
          merchantOf: () => merchant,
          config: { inlineDriveMs, breakerOpenMode: "accept", refundRetryAfterMs: 0 },
        });
        // The fault: the next charge is made and its answer lost; off again once the acquirer has it.
        sim.faults.update({ timeoutAfterChargeRate: 1 });
        const key = "acquirer-timeout-1";
        const charges = () => sim.state.stats().authorizations;
        const states: string[] = [];
        const noteState = (status: string) => {
          if (states.at(-1)?.startsWith(`${status} `)) return;
          states.push(`${status} at ${at().toFixed(1)} s`);
        };
        const answer = await service.app.inject({
          method: "POST",
          url: "/v1/payments",
          headers: { "content-type": "application/json", "idempotency-key": key },
          payload: JSON.stringify({
            amountMinor: "5000",
            currency: "BRL",
            cardToken: "tok_visa_4242",
            capture: true,
          }),
        });
        const created = JSON.parse(answer.body) as { id?: string; status?: string };
        if (created.id === undefined)
          throw new Error(`POST /v1/payments answered ${answer.statusCode}: ${answer.body}`);
        noteState(`${created.status} (HTTP ${answer.statusCode})`);
        ctx.progress(0.3);
        let status = String(created.status);
        const endMs = Date.now() + settleMaxMs;
        while (!FINAL.has(status) && Date.now() < endMs) {
          if (charges() > 0) sim.faults.update({ timeoutAfterChargeRate: 0 });
          ctx.point("charges at the acquirer", at(), charges());
          await sleep(WATCH_MS, undefined, { signal });
          const got = await service.app.inject({ method: "GET", url: `/v1/payments/${created.id}` });
          status = String((JSON.parse(got.body) as { status?: string }).status);
          noteState(status);
          ctx.progress(Math.min(0.95, 0.3 + (0.65 * (Date.now() - t0Ms)) / settleMaxMs));
        }
        ctx.point("charges at the acquirer", at(), charges());
        const stats = sim.state.stats();
        const authorization = sim.state.getByKey(paymentAcquirerKey(merchant, key));
        const lost = sim.faults.counters().responsesLost;
        ctx.progress(1);
        return (
          `One payment, the acquirer's answer to its charge lost (${lost} hung response): the payment went ` +
          `${states.join(" → ")}; acquirer calls: ${callLog.join(", ")}; at the acquirer: ` +
          `${stats.authorizations} authorization (${authorization.attempts} attempt, ${authorization.status}), ` +
          `${stats.captures} capture — ${stats.authorizations === 1 && authorization.attempts === 1 ? "no double charge" : "CHARGED MORE THAN ONCE"}.`
        );
      } finally {
        await close();
      }
    },
  };
}
