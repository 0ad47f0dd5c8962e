/**
 * The shape every system's `bench/main.ts` shares: parse the flags (a bad flag → exit 2
 * with the message), `--help`, open the engine the bench runs on, run, and always close
 * it — also on Ctrl-C, so a spawned engine and the run's keys or schemas never outlive
 * the bench. Progress goes to stderr; the report to stdout.
 *
 * @example
 * const program: BenchProgram<Args, Target> = { name: "payments", parseArgs, isArgsError: benchErrors.is,
 *   help: benchHelp, openTarget: () => openPgTarget({ env: process.env, log }), run };
 * if (import.meta.main) runBenchEntry(program);
 */
import { benchFormat } from "./bench-report.ts";

export interface BenchProgram<
  Args extends { readonly help: boolean },
  Target extends { close(): Promise<void> },
> {
  /** The system's name, for messages. */
  readonly name: string;
  /** Throws on bad flags; `isArgsError` tells such errors from bugs. */
  parseArgs(argv: readonly string[]): Args;
  isArgsError(error: unknown): error is Error;
  readonly help: string;
  /** Opens what the bench runs against (an engine it may spawn). */
  openTarget(): Promise<Target>;
  /** Runs the scenarios and prints the report (JSON lines when `json`). */
  run(target: Target, args: Args, json: boolean): Promise<void>;
}

export const benchLog = (line: string): void => {
  process.stderr.write(`${line}\n`);
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export async function runBenchMain<
  Args extends { readonly help: boolean },
  Target extends { close(): Promise<void> },
>(program: BenchProgram<Args, Target>, argv: readonly string[]): Promise<number> {
  let args: Args;
  try {
    args = program.parseArgs(argv);
  } catch (error) {
    if (!program.isArgsError(error)) throw error;
    benchLog(`${program.name} bench: ${error.message}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(program.help.endsWith("\n") ? program.help : `${program.help}\n`);
    return 0;
  }
  const target = await program.openTarget();
  const interrupted = (signal: NodeJS.Signals) => {
    benchLog(`${signal}: cleaning up`);
    void target.close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    await program.run(target, args, benchFormat(argv) === "json");
    return 0;
  } finally {
    await target.close();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

/** The entry point: runs `runBenchMain` on the process's arguments and sets the exit code. */
export function runBenchEntry<
  Args extends { readonly help: boolean },
  Target extends { close(): Promise<void> },
>(program: BenchProgram<Args, Target>): void {
  runBenchMain(program, process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      benchLog(
        `${program.name} bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      process.exitCode = 1;
    },
  );
}
