/**
 * `casebook bench feed`: the template's placeholder scenario — GET /healthz on the
 * service running as its own process, open loop at a fixed rate, latency from the intended
 * send time — so the bench prints the house rows from day one. It measures the service
 * base, not feed's mechanism: replace it with the design's own scenarios, beside the
 * best peer that runs on this machine. Markdown table on stdout, JSON lines with --json,
 * progress on stderr.
 *
 * @example
 * // node systems/feed/bench/main.ts --rate-per-s 500 --duration-ms 3000 --json
 */
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { renderBench, rowsFromLoad } from "@casebook/lab/bench-report";
import { runOpenLoop } from "@casebook/lab/load-generator";
import { startServerProcess } from "@casebook/lab/server-process";
import { errors } from "../src/errors.ts";

const SYSTEM = "feed";
/** The service as it runs in production: its own process, through its real entry point. */
const serviceEntry = new URL("../src/main.ts", import.meta.url);

interface ServiceProcess {
  readonly url: string;
  close(): Promise<void>;
}

async function startService(): Promise<ServiceProcess> {
  const server = await startServerProcess({ name: SYSTEM, entry: serviceEntry, env: {} });
  return { url: server.url, close: () => server.stop() };
}
/** A request not answered within this counts as an error and frees its slot. */
const REQUEST_TIMEOUT_MS = 5_000;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly ratePerS: number;
  readonly durationMs: number;
  readonly warmupMs: number;
}

/** Each flag with its bounds, default and help line: a typo is refused, not run for a day. */
const cli = defineBenchArgs({
  flags: {
    ratePerS: flag.integer({ min: 1, max: 50_000, default: 200, help: "arrivals per second" }),
    durationMs: flag.integer({
      min: 100,
      max: 600_000,
      default: 5_000,
      help: "measured time, warmup included",
    }),
    warmupMs: flag.integer({ min: 0, max: 60_000, default: 1_000, help: "leading time not measured" }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `feed bench — the template's placeholder: GET /healthz, open loop

Usage
  npx casebook bench feed [options]

Measures the service base (GET /healthz on src/main.ts, run as its own process), not
feed's mechanism: it is what \`casebook new\` lays down, until the design's own
scenarios and their peer replace it.

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const args: BenchArgs = cli.parse(argv);
  if (args.warmupMs >= args.durationMs) {
    throw errors.create("BENCH_ARGS_INVALID", {
      detail: `--warmup-ms ${args.warmupMs} must be below --duration-ms ${args.durationMs}`,
      fields: { flag: "warmup-ms" },
    });
  }
  return args;
}

async function run(service: ServiceProcess, args: BenchArgs, json: boolean): Promise<void> {
  benchLog(`${SYSTEM} bench: GET ${service.url}/healthz at ${args.ratePerS}/s for ${args.durationMs} ms`);
  const report = await runOpenLoop({
    ratePerS: args.ratePerS,
    durationMs: args.durationMs,
    warmupMs: args.warmupMs,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    task: async ({ signal }) => {
      const res = await fetch(`${service.url}/healthz`, { signal });
      await res.body?.cancel();
      if (res.status !== 200) throw new Error(`GET /healthz answered ${res.status}`);
    },
  });
  const rows = rowsFromLoad(
    { system: SYSTEM, scenario: `GET /healthz, open loop ${args.ratePerS}/s` },
    report,
  );
  process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
}

export const benchProgram: BenchProgram<BenchArgs, ServiceProcess> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: startService,
  run,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
