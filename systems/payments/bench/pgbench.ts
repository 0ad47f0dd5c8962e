/**
 * The peer: `pgbench -b tpcb-like`, PostgreSQL's own TPC-B-like script (three UPDATEs,
 * one SELECT, one INSERT in one transaction: the natural cost of one committed
 * transfer), run on the same server as the ledger, in a schema of its own so a shared
 * server's `public` is never touched (PGOPTIONS sets search_path; pgbench creates its
 * tables unqualified).
 *
 * Latency percentiles come from pgbench's per-transaction log (`-l`), read into the same
 * HDR histogram as ours; TPS is pgbench's "without initial connection time".
 *
 * @example
 * const peer = await preparePgbench(url, { scale: 32, log });
 * const run = await peer.run({ clients: 8, durationS: 5 });
 * run.tps; run.latencyMs.p99;
 * await peer.drop();
 */
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { Histogram } from "@casebook/kit/histogram";
import { findExecutable, findPostgresBinDir } from "@casebook/lab/executables";
import { uniqueName } from "@casebook/lab/test-engines";
import pg from "pg";
import { benchErrors } from "./bench-errors.ts";

export interface PgbenchRun {
  readonly clients: number;
  /** Committed transactions per second, connection time excluded. */
  readonly tps: number;
  readonly transactions: number;
  readonly failed: number;
  /** From the per-transaction log, ms. */
  readonly latencyMs: { p50: number; p99: number; max: number };
}

export interface Pgbench {
  readonly path: string;
  readonly version: string;
  readonly scale: number;
  run(options: { clients: number; durationS: number }): Promise<PgbenchRun>;
  /** Drops pgbench's schema. Idempotent. */
  drop(): Promise<void>;
}

/** Bound on `pgbench -i`: scale 32 loads 3.2 M rows, ~20 s on a slow disk. */
const initTimeoutMs = 300_000;
/** A run may outlast -T by connection setup and the final drain; past this it hung. */
const runGraceMs = 60_000;
/** Bound on pgbench's captured output. */
const maxOutputBytes = 10_000_000;

/** pgbench beside the newest server (the same major), else the one on PATH; undefined when neither exists. */
export function findPgbench(): string | undefined {
  const binDir = findPostgresBinDir();
  if (binDir) {
    try {
      accessSync(join(binDir, "pgbench"), constants.X_OK);
      return join(binDir, "pgbench");
    } catch {
      // Debian ships pgbench in postgresql-contrib / -client: fall back to PATH.
    }
  }
  return findExecutable("pgbench");
}

interface Invocation {
  path: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs: number;
}

function invoke(call: Invocation): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      call.path,
      call.args,
      {
        env: call.env,
        timeout: call.timeoutMs,
        maxBuffer: maxOutputBytes,
        ...(call.cwd ? { cwd: call.cwd } : {}),
      },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (!error) return resolve(output);
        const code = typeof error.code === "number" ? error.code : String(error.code ?? error.signal);
        reject(
          benchErrors.create("PAYMENTS_BENCH_TOOL_FAILED", {
            detail: `pgbench ${call.args.join(" ")} failed (${code}): ${output.slice(-2_000)}`,
            fields: { code: String(code), output: output.slice(-8_000) },
            cause: error,
          }),
        );
      },
    );
  });
}

/** libpq's connection flags and environment for `url`, with search_path on `schema`. */
function connection(url: string, schema: string): { args: string[]; env: NodeJS.ProcessEnv } {
  const parsed = new URL(url);
  const args = ["-h", parsed.hostname, "-p", parsed.port || "5432"];
  if (parsed.username) args.push("-U", decodeURIComponent(parsed.username));
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    LC_ALL: "C",
    PGOPTIONS: `-c search_path=${quoteIdentifier(schema)}`,
    PGCONNECT_TIMEOUT: "10",
  };
  if (parsed.password) env.PGPASSWORD = decodeURIComponent(parsed.password);
  return { args, env: { ...env, PGDATABASE: decodeURIComponent(parsed.pathname.slice(1)) || "postgres" } };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Parses pgbench's summary: "tps = 1634.1 (without initial connection time)",
 * "number of transactions actually processed: 8170", "number of failed transactions: 0".
 *
 * @example
 * parsePgbenchSummary("tps = 1634.123 (without initial connection time)\n...").tps; // 1634.123
 */
export function parsePgbenchSummary(output: string): { tps: number; transactions: number; failed: number } {
  const tps = /^tps = ([\d.]+) \(without initial connection time\)/m.exec(output)?.[1];
  const transactions = /^number of transactions actually processed: (\d+)/m.exec(output)?.[1];
  const failed = /^number of failed transactions: (\d+)/m.exec(output)?.[1] ?? "0";
  if (tps === undefined || transactions === undefined) {
    throw benchErrors.create("PAYMENTS_BENCH_TOOL_FAILED", {
      detail: `pgbench printed no tps line: ${output.slice(-2_000)}`,
      fields: { output: output.slice(-8_000) },
    });
  }
  return { tps: Number(tps), transactions: Number(transactions), failed: Number(failed) };
}

/** Reads every per-transaction log line (client, txn, latency µs, …) into one histogram. */
async function latencyFromLogs(dir: string): Promise<Histogram> {
  const histogram = new Histogram({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000 });
  for (const file of await readdir(dir)) {
    if (!file.startsWith("pgbench_log")) continue;
    for (const line of (await readFile(join(dir, file), "utf8")).split("\n")) {
      const latencyUs = Number(line.split(" ")[2]);
      // A failed transaction logs "failed"/"serialization" instead of a number: not a latency.
      if (line !== "" && Number.isFinite(latencyUs)) histogram.record(latencyUs);
    }
  }
  return histogram;
}

async function runOnce(
  path: string,
  conn: { args: string[]; env: NodeJS.ProcessEnv },
  options: { clients: number; durationS: number },
): Promise<PgbenchRun> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-pgbench-"));
  try {
    const { clients, durationS } = options;
    const args = [
      ...conn.args,
      ...["-b", "tpcb-like", "-c", String(clients), "-j", String(clients), "-T", String(durationS)],
      ...["-n", "-l", `--log-prefix=${join(dir, "pgbench_log")}`],
    ];
    const output = await invoke({
      path,
      args,
      env: conn.env,
      cwd: dir,
      timeoutMs: durationS * 1_000 + runGraceMs,
    });
    const summary = parsePgbenchSummary(output);
    const histogram = await latencyFromLogs(dir);
    const ms = (us: number) => us / 1_000;
    return {
      clients,
      ...summary,
      latencyMs: {
        p50: ms(histogram.percentile(50)),
        p99: ms(histogram.percentile(99)),
        max: ms(histogram.max),
      },
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Creates pgbench's tables at `scale` in a fresh schema. Scale ≥ clients: every tpcb-like
 * transaction updates one of `scale` branch rows, so with fewer branches than clients the
 * clients would queue on branch row locks and measure lock waits, not commits (pgbench's
 * docs: scale should be at least the number of clients).
 */
export async function preparePgbench(
  url: string,
  options: { scale: number; log: (line: string) => void },
): Promise<Pgbench> {
  const path = findPgbench();
  if (!path) throw benchErrors.create("PAYMENTS_BENCH_TOOL_MISSING", {});
  const schema = uniqueName("bench_pgbench");
  const conn = connection(url, schema);
  const version = (await invoke({ path, args: ["--version"], env: conn.env, timeoutMs: 10_000 })).trim();
  await adminQuery(url, `CREATE SCHEMA ${quoteIdentifier(schema)}`);
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    await adminQuery(url, `DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
  };
  try {
    options.log(`pgbench -i -s ${options.scale} (schema ${schema})`);
    await invoke({
      path,
      args: [...conn.args, "-i", "-q", "-s", String(options.scale)],
      env: conn.env,
      timeoutMs: initTimeoutMs,
    });
  } catch (error) {
    await drop();
    throw error;
  }
  return { path, version, scale: options.scale, run: (o) => runOnce(path, conn, o), drop };
}
