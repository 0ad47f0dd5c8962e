/**
 * The payments configuration's cross-field checks, run after each field is valid on its own.
 *
 * One rule so far: with `DATABASE_URL` (PostgreSQL, shared by every replica) and no `ACQUIRER_URL`,
 * the start is refused. Each process would start its own in-process acquirer simulator, whose
 * authorizations live in that process's memory: a payment authorized through replica A and
 * captured through replica B would be captured at a simulator that never saw it, and fail. The
 * embedded PGlite database is held by one process only, so there the in-process simulator is safe.
 *
 * Why refuse rather than share one simulator between replicas: a shared in-process simulator
 * would live and die with whichever replica hosts it (a SIGKILLed host loses every replica's
 * authorizations), and electing a host is a mechanism the real deployment never needs — there
 * the acquirer is outside. Starting the simulator as its own service is one command.
 *
 * @example
 * const problems = crossFieldProblems({ databaseUrl: "postgres://…", acquirerUrl: undefined });
 * problems[0]?.message; // "ACQUIRER_URL is required when DATABASE_URL is set: …"
 */
import type { ConfigProblem } from "@casebook/kit/config";

/** The one line a refused start prints: what to set, and the command that gives it a value. */
export const ACQUIRER_URL_REQUIRED =
  "ACQUIRER_URL is required when DATABASE_URL is set: every replica must call the same acquirer " +
  "(start one with `npx casebook payments acquirer-sim` and set ACQUIRER_URL=http://127.0.0.1:8154)";

export function crossFieldProblems(config: {
  readonly databaseUrl: string | undefined;
  readonly acquirerUrl: string | undefined;
}): ConfigProblem[] {
  if (config.databaseUrl === undefined || config.acquirerUrl !== undefined) return [];
  return [
    {
      setting: "acquirerUrl",
      env: "ACQUIRER_URL",
      source: "missing",
      value: undefined,
      expected: "an http(s) URL when DATABASE_URL is set",
      message: ACQUIRER_URL_REQUIRED,
    },
  ];
}
