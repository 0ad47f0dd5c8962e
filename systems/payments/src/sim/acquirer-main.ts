/**
 * Starts the acquirer simulator as its own service (it stands for a system outside
 * payments, so it runs in its own process): config from the environment → the
 * simulator → listen → graceful shutdown on SIGINT/SIGTERM.
 *
 * @example
 * // PORT=8154 ACQUIRER_SEED=42 node systems/payments/src/sim/acquirer-main.ts
 * const running = await main({ PORT: "0", ACQUIRER_SEED: "7" });
 * await running.close();
 */
import { requireCredentialsBeyondLoopback } from "@casebook/infra/http/loopback-guard";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import type { Clock } from "@casebook/kit/clock";
import { field, loadConfig } from "@casebook/kit/config";
import { seededRandom, systemRandom } from "@casebook/kit/random";
import { defaultBehaviour } from "./acquirer-behaviour.ts";
import { SETTLEMENT_TIMINGS } from "./acquirer-routes.ts";
import { type AcquirerSim, createAcquirerSim, defaultMaxPayments } from "./acquirer-sim.ts";

export const acquirerConfigSchema = {
  ...listenFields({ port: 8154 }),
  seed: field.string({
    env: "ACQUIRER_SEED",
    description: "Seed of ids, declines and faults (unset = Math.random); same seed + same calls = same run",
  }),
  maxPayments: field.int({
    env: "ACQUIRER_MAX_PAYMENTS",
    default: defaultMaxPayments,
    min: 1,
    max: 10_000_000,
    description: "Authorizations held in memory; past it authorize answers 507",
  }),
  declineRate: field.number({
    env: "ACQUIRER_DECLINE_RATE",
    default: defaultBehaviour.declineRate,
    min: 0,
    max: 1,
    description: "Probability a new authorization is declined",
  }),
  latencyMs: field.int({
    env: "ACQUIRER_LATENCY_MS",
    default: defaultBehaviour.latencyMs,
    min: 0,
    max: 60_000,
    description: "Latency added to every /v1 call",
  }),
  settlement: field.enum(SETTLEMENT_TIMINGS, {
    env: "ACQUIRER_SETTLEMENT",
    default: "d+1",
    description:
      "When a day's settlement file is published: d+1 once the UTC day is over; immediate = today's so far (a demo: reconcile today's payments at once)",
  }),
  adminToken: field.string({
    env: "ACQUIRER_ADMIN_TOKEN",
    secret: true,
    description: "Bearer token for /admin/* (unset = open: a simulator on loopback)",
  }),
  ...logLevelField(),
};

export interface RunningAcquirer {
  readonly url: string;
  readonly sim: AcquirerSim;
  close(): Promise<void>;
}

export interface AcquirerMainOptions {
  /**
   * The simulator's time (default: the system clock). A test that runs the simulator as its own
   * process passes a clock it can move past midnight, so the day's D+1 file is published at once.
   */
  clock?: Clock;
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: AcquirerMainOptions = {},
): Promise<RunningAcquirer> {
  const config = loadConfig(acquirerConfigSchema, { env });
  // Its /admin routes rewrite the simulated bank's books: open only where nobody else can reach them.
  requireCredentialsBeyondLoopback({
    host: config.host,
    credentialsSet: config.adminToken !== undefined,
    setting: "ACQUIRER_ADMIN_TOKEN",
    credential: "a bearer token for /admin/* and /v1/stats",
  });
  const sim = createAcquirerSim({
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    rng: config.seed === undefined ? systemRandom : seededRandom(config.seed),
    maxPayments: config.maxPayments,
    settlement: config.settlement,
    behaviour: { declineRate: config.declineRate, latencyMs: config.latencyMs },
    ...(config.adminToken === undefined ? {} : { adminToken: config.adminToken }),
    log: { level: config.logLevel },
  });
  const { url } = await sim.listen({ port: config.port, host: config.host });
  sim.service.log.info({ url, seeded: config.seed !== undefined }, "acquirer-sim listening");
  return { url, sim, close: () => sim.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "acquirer-sim",
    summary: "the card acquirer the payments saga calls, with the failures the design discusses",
    schema: acquirerConfigSchema,
    usage: ["npx casebook payments acquirer-sim", "node systems/payments/src/sim/acquirer-main.ts"],
    notes: "Its admin API (latency, declines, outages, the D+1 file): systems/payments/README.md",
    // Signal → close(): the service drains; lost-response sockets are cut by the preClose hook.
    start: async () => (await main()).sim.service,
  });
}
