/**
 * One payments service process for the claim-takeover test: the real composition root with its
 * DEFAULT leases (PAYMENTS_CLAIM_LEASE_MS, 5 s, renewed while work runs) and a fast idle poll.
 * The acquirer client waits up to 15 s for an answer (default 2 s), so the test's held call
 * (8 s) stays one call in flight across several lease renewals instead of timing out first.
 * Prints `{"url"}` once listening; the test SIGKILLs it to crash it.
 *
 * @example
 * // DATABASE_URL=… PAYMENTS_DB_SCHEMA=pay_x ACQUIRER_URL=… LOG_LEVEL=silent node claim-takeover-child.ts
 */
import { installSignalHandlers } from "@casebook/infra/http/shutdown";
import { main } from "../src/main.ts";

const running = await main(
  { ...process.env, PORT: "0" },
  {
    acquirer: { timeouts: { connectMs: 1_000, headersMs: 15_000, bodyMs: 1_000 }, callDeadlineMs: 20_000 },
    saga: { pollIntervalMs: 50 },
  },
);
installSignalHandlers(running.service);
console.log(JSON.stringify({ url: running.url }));
