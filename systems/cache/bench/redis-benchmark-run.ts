/**
 * One `redis-benchmark` run against a port, parsed from its --csv output: requests per
 * second and latency percentiles for each test (SET, GET). redis-benchmark takes a
 * request count, not a duration: `calibrateRequests` turns a short run into the count
 * that lasts about `durationMs`.
 *
 * @example
 * const rows = await runRedisBenchmark({ port: 7000, tests: ["set", "get"], requests: 100_000,
 *   clients: 50, pipeline: 1, keyspace: 100_000, dataBytes: 100 });
 * rows.get("SET")?.rps; // e.g. 61_000
 */
import { execFile } from "node:child_process";
import { cacheErrors } from "../src/errors.ts";

export interface BenchmarkRow {
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export interface BenchmarkRun {
  readonly command: string;
  readonly port: number;
  readonly tests: readonly string[];
  readonly requests: number;
  readonly clients: number;
  readonly pipeline: number;
  readonly keyspace: number;
  readonly dataBytes: number;
}

/** Bound on one run: four times its planned length plus start-up slack, so a hang fails the bench. */
const runTimeoutMs = (plannedMs: number) => 4 * plannedMs + 30_000;
const MAX_OUTPUT_BYTES = 1_000_000;
/** Requests of a calibration run: enough to reach steady state on this machine in well under a second. */
export const CALIBRATION_REQUESTS = 20_000;
const MIN_REQUESTS = 1_000;
const MAX_REQUESTS = 20_000_000;

/**
 * Parses `redis-benchmark --csv`: a quoted header, then one quoted line per test.
 *
 * @example
 * parseCsv('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n"SET","1000.00","1","0.1","0.9","1.2","1.5","3"\n');
 * // Map { "SET" => { rps: 1000, p50Ms: 0.9, p99Ms: 1.5 } }
 */
export function parseCsv(csv: string): Map<string, BenchmarkRow> {
  const lines = csv
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith('"'))
    .map((line) => line.slice(1, -1).split('","'));
  const header = lines.find((cells) => cells[0] === "test");
  if (header === undefined) throw new Error(`no CSV header in redis-benchmark output: ${csv.slice(0, 300)}`);
  const column = (cells: string[], name: string) => {
    const value = Number(cells[header.indexOf(name)]);
    if (!Number.isFinite(value))
      throw new Error(`redis-benchmark CSV has no numeric ${name}: ${cells.join(",")}`);
    return value;
  };
  const rows = new Map<string, BenchmarkRow>();
  for (const cells of lines) {
    if (cells === header) continue;
    rows.set(cells[0]!, {
      rps: column(cells, "rps"),
      p50Ms: column(cells, "p50_latency_ms"),
      p99Ms: column(cells, "p99_latency_ms"),
    });
  }
  return rows;
}

export function runRedisBenchmark(run: BenchmarkRun, plannedMs: number): Promise<Map<string, BenchmarkRow>> {
  const args = [
    ...["-h", "127.0.0.1", "-p", String(run.port), "-t", run.tests.join(",")],
    ...["-n", String(run.requests), "-c", String(run.clients), "-P", String(run.pipeline)],
    ...["-r", String(run.keyspace), "-d", String(run.dataBytes), "--csv"],
  ];
  return new Promise((resolve, reject) => {
    execFile(
      run.command,
      args,
      { timeout: runTimeoutMs(plannedMs), maxBuffer: MAX_OUTPUT_BYTES },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            cacheErrors.create("CACHE_BENCH_TOOL_FAILED", {
              detail: `redis-benchmark ${args.join(" ")} failed: ${error.message}`,
              fields: { stderr: String(stderr).slice(-500) },
              cause: error,
            }),
          );
          return;
        }
        try {
          const rows = parseCsv(stdout);
          if (/error/i.test(stderr)) throw new Error(`redis-benchmark reported: ${stderr.slice(-300)}`);
          resolve(rows);
        } catch (cause) {
          reject(
            cacheErrors.create("CACHE_BENCH_TOOL_FAILED", {
              detail: String(cause),
              fields: { stderr: String(stderr).slice(-500) },
              cause,
            }),
          );
        }
      },
    );
  });
}

/** The request count that makes one test last about `durationMs` at the calibrated rate. */
export function calibrateRequests(calibrationRps: number, durationMs: number): number {
  const requests = Math.round((calibrationRps * durationMs) / 1_000);
  return Math.min(MAX_REQUESTS, Math.max(MIN_REQUESTS, requests));
}
