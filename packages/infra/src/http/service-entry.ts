/**
 * The entry of a service process — what its `if (import.meta.main)` runs:
 *
 * - `--help` (or `-h`) prints what it is, how to run it, and every setting it reads
 *   (env var, default, meaning: `describeConfig` of its schema), then exits 0;
 * - a bad setting fails the start with one message naming it and exit code 2 — no stack
 *   trace: a configuration mistake is the operator's to fix, not a crash;
 * - any other typed error during start (`CasebookError`: a database that refuses, a port
 *   taken) is one line with its code and exit 1; anything else is a bug and keeps its stack;
 * - once started, SIGINT/SIGTERM close the service gracefully (installSignalHandlers).
 *
 * @example
 * if (import.meta.main) {
 *   await runServiceEntry({ name: "rate-limiter", summary: "…", schema: configSchema, start: async () => (await main()).service });
 * }
 */

import { ConfigError, describeConfig, type Schema } from "@casebook/kit/config";
import { CasebookError } from "@casebook/kit/errors";
import type { Logger } from "./logger.ts";
import { installSignalHandlers } from "./shutdown.ts";

export interface ServiceEntryOptions {
  /** The program's name in messages: "rate-limiter". */
  name: string;
  /** One line: what it is. */
  summary: string;
  /** The settings `--help` lists. */
  schema: Schema;
  /** How to start it, one command a line. Default: `npx casebook run <name>`. */
  usage?: readonly string[];
  /** More help after the settings: flags of its own, a pointer to the README. */
  notes?: string;
  /** Starts it; resolves with what a signal closes. */
  start: () => Promise<{ close(): Promise<void>; log: Logger }>;
  argv?: readonly string[];
  /** Where the help and the errors go; default the process's own. */
  io?: EntryIo;
}

export interface EntryIo {
  out(text: string): void;
  err(text: string): void;
  /** Ends the process with a failure code (what the start opened must not keep it alive). */
  fail(code: number): void;
}

const processIo: EntryIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  fail: (code) => process.exit(code),
};

/** The text `--help` prints. */
export function serviceHelp(
  options: Pick<ServiceEntryOptions, "name" | "summary" | "schema" | "usage" | "notes">,
): string {
  const usage = options.usage ?? [`npx casebook run ${options.name}`];
  const lines = [
    `${options.name} — ${options.summary}`,
    "",
    "Usage",
    ...usage.map((line) => `  ${line}`),
    "",
    "Settings (environment variables; a bad value stops the start, naming it)",
    ...describeConfig(options.schema).map((line) => `  ${line}`),
  ];
  if (options.notes !== undefined) lines.push("", options.notes.trimEnd());
  return `${lines.join("\n")}\n`;
}

/** Runs the entry; resolves once the service started (or the help was printed, or the start failed). */
export async function runServiceEntry(options: ServiceEntryOptions): Promise<void> {
  const io = options.io ?? processIo;
  const argv = options.argv ?? process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    io.out(serviceHelp(options));
    return;
  }
  let running: { close(): Promise<void>; log: Logger };
  try {
    running = await options.start();
  } catch (error) {
    if (error instanceof ConfigError) {
      io.err(`${options.name}: ${error.message}\nRun it with --help for every setting.\n`);
      io.fail(2);
      return;
    }
    if (error instanceof CasebookError) {
      // The cause says where: "connect ECONNREFUSED 127.0.0.1:5432" under "the database is unavailable".
      const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
      io.err(`${options.name}: could not start: ${error.code}: ${error.message}${cause}\n`);
      io.fail(1);
      return;
    }
    throw error; // a bug: its stack is what a developer needs
  }
  installSignalHandlers(running);
}
