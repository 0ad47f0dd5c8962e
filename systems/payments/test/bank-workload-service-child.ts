/**
 * One payments service PROCESS for the bank workload: the real composition root (`src/main.ts`:
 * auth, routes, saga orchestrator, refund retrier, outbox relay) on the shared PostgreSQL schema
 * (PAYMENTS_DB_SCHEMA), with the crash-test timings below so a SIGKILLed replica's leases expire
 * in seconds. Everything else comes from the environment, as for `npm start`.
 * argv: <port>. Stops gracefully on SIGTERM/SIGINT; the test SIGKILLs it to crash it.
 *
 * @example
 * // PORT is argv[2] so lab's EngineProcess can restart it on the same port after a kill:
 * // DATABASE_URL=… PAYMENTS_DB_SCHEMA=pay_x ACQUIRER_URL=… node bank-workload-service-child.ts 8104
 */
import { installSignalHandlers } from "@casebook/infra/http/shutdown";
import { main, type PaymentsTuning } from "../src/main.ts";

/**
 * A hung acquirer call gives up after 400 ms of waiting for headers; one call (all tries) ends
 * within 1.2 s, so a saga lease of 2.5 s and a refund lease of 3.5 s outlive any live call
 * (the orchestrator and the retrier check that) yet expire soon after a crash.
 */
export const crashTestTuning: PaymentsTuning = {
  acquirer: {
    timeouts: { connectMs: 200, headersMs: 400, bodyMs: 200 },
    callDeadlineMs: 1_200,
    retryBaseMs: 5,
    retryCapMs: 40,
    breaker: { failureThreshold: 5, openDurationMs: 500 },
  },
  saga: {
    leaseMs: 2_500,
    pollIntervalMs: 25,
    backoff: { baseMs: 20, capMs: 300, budgetMs: 120_000, maxAttempts: 1_000 },
  },
  refunds: {
    leaseMs: 3_500,
    pollIntervalMs: 50,
    backoff: { baseMs: 20, capMs: 300, maxAttempts: 200, budgetMs: 120_000 },
  },
};

if (import.meta.main) {
  const port = process.argv[2];
  if (port === undefined || !/^\d+$/.test(port))
    throw new Error("usage: bank-workload-service-child.ts <port>");
  const running = await main({ ...process.env, PORT: port }, crashTestTuning);
  installSignalHandlers(running.service);
}
