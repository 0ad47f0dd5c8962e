/**
 * The floor measured the way the issue states it: `redis-benchmark -c 50` sending
 * `EVALSHA <sha> 1 key capacity rate 1` of the design text's script, unpipelined,
 * keys spread over the same number of users (`__rand_int__` with `-r`). No Node in
 * the path: this is what one round trip per decision costs on this Redis.
 *
 * redis-benchmark takes a request count, not a duration: a first short run warms
 * up and calibrates, the second runs ≈ `durationMs` at the calibrated rate.
 *
 * @example
 * const floor = await runRedisBenchmark({ url, sha, keyPrefix, users: 10_000, concurrency: 50,
 *   durationMs: 5_000, limit: benchLimit, log });
 * floor?.rps; // e.g. 57_000
 */
import { execFile } from "node:child_process";
import { findExecutable } from "@casebook/lab/executables";
import type { TokenBucketLimit } from "../src/domain/algorithm.ts";
import { benchErrors } from "./bench-errors.ts";

export interface RedisBenchmarkResult {
  readonly requests: number;
  readonly rps: number;
  readonly avgMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

export interface RedisBenchmarkOptions {
  readonly url: string;
  /** SHA1 of bench/seed-token-bucket.lua, already SCRIPT LOADed. */
  readonly sha: string;
  readonly keyPrefix: string;
  readonly users: number;
  readonly concurrency: number;
  readonly durationMs: number;
  readonly limit: TokenBucketLimit;
  readonly log: (line: string) => void;
}

/** Requests of the calibration run (≈ 0.3 s at 60k/s): enough to warm up and estimate the rate. */
const calibrationRequests = 20_000;
/** Bound on one measured run's requests, whatever the calibration said. */
const maxRequests = 50_000_000;
/** Bound on one redis-benchmark process: generous over its expected time, so a hang ends. */
const toolTimeoutMs = (durationMs: number) => 4 * durationMs + 30_000;
/** Bound on what we read from redis-benchmark's stdout. */
const maxOutputBytes = 1_000_000;

/**
 * Parses `redis-benchmark --csv` output: a header line, then one quoted line per test.
 *
 * @example
 * parseBenchmarkCsv('"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"\n"EVALSHA","57000.00","0.8","0.1","0.7","1.3","1.9","5.0"\n');
 * // { rps: 57000, avgMs: 0.8, p50Ms: 0.7, p99Ms: 1.9, maxMs: 5, requests: 0 }
 */
export function parseBenchmarkCsv(csv: string): Omit<RedisBenchmarkResult, "requests"> & { requests: 0 } {
  const rows = csv
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith('"'))
    .map((line) => line.slice(1, -1).split('","'));
  const header = rows.find((cells) => cells[0] === "test");
  const data = rows.find((cells) => cells[0] !== "test");
  if (!header || !data) throw new Error(`no CSV result in redis-benchmark output: ${csv.slice(0, 300)}`);
  const field = (name: string) => {
    const value = Number(data[header.indexOf(name)]);
    if (!Number.isFinite(value))
      throw new Error(`redis-benchmark CSV has no numeric ${name}: ${csv.slice(0, 300)}`);
    return value;
  };
  return {
    requests: 0,
    rps: field("rps"),
    avgMs: field("avg_latency_ms"),
    p50Ms: field("p50_latency_ms"),
    p99Ms: field("p99_latency_ms"),
    maxMs: field("max_latency_ms"),
  };
}

function runTool(command: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, maxBuffer: maxOutputBytes }, (error, stdout, stderr) => {
      if (!error) return resolve(stdout);
      reject(
        benchErrors.create("RATELIMIT_BENCH_TOOL_FAILED", {
          detail: `redis-benchmark failed: ${error.message}`,
          fields: { code: error.code, stderr: String(stderr).slice(-500) },
          cause: error,
        }),
      );
    });
  });
}

/** Runs the floor; resolves undefined (after saying why) when redis-benchmark is not installed. */
export async function runRedisBenchmark(
  options: RedisBenchmarkOptions,
): Promise<RedisBenchmarkResult | undefined> {
  const command = findExecutable("redis-benchmark");
  if (!command) {
    options.log("redis-benchmark not found (Debian package redis-tools): skipping its floor row");
    return undefined;
  }
  const { limit } = options;
  const argsFor = (requests: number) => [
    ...["-u", options.url, "-c", String(options.concurrency), "-n", String(requests)],
    ...["-r", String(options.users), "--csv"],
    ...["EVALSHA", options.sha, "1", `${options.keyPrefix}seed-rb:__rand_int__`],
    ...[String(limit.capacity), String(limit.ratePerS), "1"],
  ];
  const timeoutMs = toolTimeoutMs(options.durationMs);
  options.log(`redis-benchmark -c ${options.concurrency} EVALSHA (seed script): calibrating`);
  const calibration = parseBenchmarkCsv(await runTool(command, argsFor(calibrationRequests), timeoutMs));
  const requests = Math.min(
    maxRequests,
    Math.max(options.concurrency * 10, Math.round((calibration.rps * options.durationMs) / 1_000)),
  );
  options.log(`redis-benchmark -c ${options.concurrency} EVALSHA (seed script): ${requests} requests`);
  const measured = parseBenchmarkCsv(await runTool(command, argsFor(requests), timeoutMs));
  return { ...measured, requests };
}
