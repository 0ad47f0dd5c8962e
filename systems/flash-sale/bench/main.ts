/**
 * `casebook bench flash-sale`: the reserve script from Node against its floors on the same
 * Redis in the same run (`redis-benchmark` EVALSHA of the same script, c=50 unpipelined and
 * -P 16), stock ≫ attempts so it measures admissions; then FS-06's three PostgreSQL
 * strategies and the script under one load (attempts/s, p99, retries) as one table; the 100k/5k
 * sale end to end; and FS-15's drain ceiling: the charge queue drained through the payments
 * service (its own process) at rising rates, beside payments' own saga throughput. Markdown
 * on stdout, JSON lines with --json, progress on stderr. Engines: REDIS_URL and DATABASE_URL
 * (default: this machine's 6379 and 5432/test), under a key prefix and a schema of its own,
 * removed at the end.
 *
 * @example
 * // node systems/flash-sale/bench/main.ts --attempts 20000 --json
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { closeRedis, connectRedis, type RedisClient } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, benchRow, renderBench } from "@casebook/lab/bench-report";
import { DEFAULT_RESERVE_BATCH, DEFAULT_RESERVE_LANES } from "../src/config.ts";
import type { StockCounter } from "../src/domain/stock-counter.ts";
import { errors } from "../src/errors.ts";
import { migrateFlashSale } from "../src/store/migrate.ts";
import {
  ConditionalCounter,
  OptimisticCounter,
  PessimisticCounter,
  resetStockRow,
  ScriptCounter,
} from "../src/store/pg-stock-strategies.ts";
import { StockStore, stockKeys, stockScriptsDir } from "../src/store/stock-store.ts";
import { drainCeiling } from "./drain-ceiling.ts";
import { saleEndToEnd } from "./sale-end-to-end.ts";

const SYSTEM = "flash-sale";
/** Bound on one redis-benchmark run. */
const PEER_TIMEOUT_MS = 120_000;
/** redis-benchmark's -P of the pipelined floor. */
const FLOOR_PIPELINE = 16;
/** Rounds of the batched run and its -P 16 floor, alternated; each keeps its best. */
const BEST_OF = 3;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly attempts: number;
  readonly clients: number;
  readonly strategyAttempts: number;
  readonly strategyStock: number;
  readonly e2eEntrants: number;
  readonly e2eTickets: number;
  readonly e2eCapacity: number;
  readonly e2eOnly: boolean;
  readonly drainRates: readonly number[];
  readonly drainSeconds: number;
  readonly drainInFlight: number;
  readonly drainSagaClients: number;
  readonly drainSagaMs: number;
  readonly drainOnly: boolean;
}

const cli = defineBenchArgs({
  flags: {
    attempts: flag.integer({
      min: 100,
      max: 10_000_000,
      default: 20_000,
      help: "reserve calls per Redis scenario",
    }),
    clients: flag.integer({ min: 1, max: 1_000, default: 50, help: "calls in flight (redis-benchmark -c)" }),
    strategyAttempts: flag.integer({
      min: 10,
      max: 1_000_000,
      default: 2_000,
      help: "attempts per FS-06 strategy",
    }),
    strategyStock: flag.integer({ min: 1, max: 1_000_000, default: 500, help: "stock per FS-06 strategy" }),
    e2eEntrants: flag.integer({
      min: 10,
      max: 1_000_000,
      default: 100_000,
      help: "entrants of the end-to-end sale",
    }),
    e2eTickets: flag.integer({
      min: 0,
      max: 1_000_000,
      default: 5_000,
      help: "tickets of the end-to-end sale; 0 skips it",
    }),
    e2eCapacity: flag.integer({
      min: 1,
      max: 100_000,
      default: 300,
      help: "checkout's configured capacity in the end-to-end sale (the room's admissions/s)",
    }),
    e2eOnly: flag.boolean({ help: "run only the end-to-end sale" }),
    drainRates: flag.integerList({
      min: 1,
      max: 10_000,
      default: [10, 20, 40, 80, 160],
      help: "configured charge rates of the drain-ceiling steps, rising; stops after the first not kept up",
    }),
    drainSeconds: flag.integer({
      min: 0,
      max: 600,
      default: 8,
      help: "each drain step's charges = rate × this; 0 skips the drain ceiling",
    }),
    drainInFlight: flag.integer({
      min: 1,
      max: 256,
      default: 16,
      help: "charge calls in flight while draining",
    }),
    drainSagaClients: flag.integer({
      min: 1,
      max: 256,
      default: 16,
      help: "clients of payments' own saga throughput (closed loop) beside the drain",
    }),
    drainSagaMs: flag.integer({
      min: 500,
      max: 600_000,
      default: 8_000,
      help: "how long payments' own saga throughput is measured, each time (warmup 1/8 of it)",
    }),
    drainOnly: flag.boolean({ help: "run only the drain ceiling against the payments service" }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `flash-sale bench — the reserve script vs its redis-benchmark floors; FS-06's strategies; the 100k/5k sale; the charge queue's drain ceiling against payments

Usage
  npx casebook bench flash-sale [options]

Options
${cli.flagHelp()}
`;

interface Target {
  readonly redis: RedisClient;
  readonly redisUrl: string;
  readonly db: Database;
  readonly stock: StockStore;
  /** The same connection, reservations batched across concurrent callers (the service's default). */
  readonly batched: StockStore;
  readonly prefix: string;
  readonly pgUrl: string;
  close(): Promise<void>;
}

async function openTarget(): Promise<Target> {
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const pgUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
  const prefix = `flash_bench_${process.pid}:`;
  const redis = await connectRedis({ url: redisUrl, keyPrefix: prefix, commandTimeoutMs: 10_000 });
  const registry = await ScriptRegistry.fromDir(stockScriptsDir);
  await registry.loadAll(redis);
  const schema = `flash_bench_${process.pid}`;
  const db = await openDatabase({ system: SYSTEM, url: pgUrl, schema, pool: { maxConnections: 16 } });
  await migrateFlashSale(db);
  const sales = new Set<string>();
  return {
    redis,
    redisUrl,
    db,
    prefix,
    pgUrl,
    stock: new StockStore(new RedisScriptRunner(redis, registry)),
    batched: new StockStore(new RedisScriptRunner(redis, registry), {
      reserveBatch: { maxBatch: DEFAULT_RESERVE_BATCH, maxPending: 100_000, lanes: DEFAULT_RESERVE_LANES },
    }),
    close: async () => {
      for (const id of ["script", "batched", "peer", "strategies"]) {
        const k = stockKeys(id);
        await redis.del(k.stock, k.holds, k.quantities);
      }
      sales.clear();
      await closeRedis(redis);
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
      await db.close();
    },
  };
}

/** Runs `attempts` calls of `take` with `clients` in flight; rate and latency percentiles. */
async function closedLoop(attempts: number, clients: number, take: () => Promise<unknown>) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next++ < attempts) {
        const t0 = performance.now();
        await take();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!;
  return { perS: latencies.length / elapsedS, p50Ms: p(0.5), p99Ms: p(0.99) };
}

async function redisBenchmark(t: Target, args: BenchArgs, pipeline: number): Promise<number | undefined> {
  const url = new URL(t.redisUrl);
  const k = stockKeys("peer");
  const sha =
    t.stock &&
    (await t.redis.script("LOAD", (await ScriptRegistry.fromDir(stockScriptsDir)).get("reserve-stock").lua));
  const argv = [
    ...[
      "-h",
      url.hostname,
      "-p",
      url.port || "6379",
      "-c",
      String(args.clients),
      "-n",
      String(args.attempts),
    ],
    ...["-P", String(pipeline), "-r", "1000000000", "--csv"],
    ...[
      "EVALSHA",
      String(sha),
      "3",
      `${t.prefix}${k.stock}`,
      `${t.prefix}${k.holds}`,
      `${t.prefix}${k.quantities}`,
    ],
    ...["p:__rand_int__", "1", "600000"],
  ];
  try {
    const { stdout } = await promisify(execFile)("redis-benchmark", argv, { timeout: PEER_TIMEOUT_MS });
    const line = stdout.trim().split("\n").at(-1) ?? "";
    const rps = Number(line.split(",")[1]?.replaceAll('"', ""));
    return Number.isFinite(rps) ? rps : undefined;
  } catch (error) {
    benchLog(`redis-benchmark did not run: ${(error as Error).message.split("\n")[0]}`);
    return undefined;
  }
}

async function run(t: Target, args: BenchArgs, json: boolean): Promise<void> {
  const rows: BenchResult[] = [];
  if (args.drainOnly) {
    rows.push(...(await drain(t, args)));
    process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
    return;
  }
  if (args.e2eOnly) {
    rows.push(...(await endToEnd(t, args)));
    process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
    return;
  }
  const huge = args.attempts * 100;
  await t.stock.restore("script", { epoch: 1, available: huge, carried: [], recheckMs: 600_000 });
  await t.stock.restore("peer", { epoch: 1, available: huge, carried: [], recheckMs: 600_000 });
  benchLog(`${SYSTEM} bench: ${args.attempts} reserve calls from Node, c=${args.clients}`);
  let seq = 0;
  const node = await closedLoop(args.attempts, args.clients, () =>
    t.stock.reserve("script", { holdId: `n${seq++}`, quantity: 1, holdTtlMs: 600_000 }),
  );
  await t.stock.restore("batched", { epoch: 1, available: huge, carried: [], recheckMs: 600_000 });
  benchLog(
    `${SYSTEM} bench: ${args.attempts} reserve calls batched across ${args.clients * FLOOR_PIPELINE} callers`,
  );
  // The -P 16 floor keeps clients × 16 calls outstanding: the batched run gets as many callers.
  // On a shared, loaded machine two runs back to back differ by 2×: the batched run and its
  // floor alternate for BEST_OF rounds and each keeps its best, so both see the same moments.
  const callers = args.clients * FLOOR_PIPELINE;
  let batched = { perS: 0, p50Ms: 0, p99Ms: 0 };
  let floorP16: number | undefined;
  for (let round = 0; round < BEST_OF; round++) {
    const r = await closedLoop(args.attempts, callers, () =>
      t.batched.reserve("batched", { holdId: `b${seq++}`, quantity: 1, holdTtlMs: 600_000 }),
    );
    if (r.perS > batched.perS) batched = r;
    const f = await redisBenchmark(t, args, FLOOR_PIPELINE);
    if (f !== undefined && (floorP16 === undefined || f > floorP16)) floorP16 = f;
  }
  const batchStats = t.batched.reserveBatchStats!;
  const floor = await redisBenchmark(t, args, 1);
  const scenario = `reserve script, stock ≫ attempts, c=${args.clients}`;
  const peer = (name: string, value: number | undefined) =>
    value === undefined ? {} : { peer: { name, value } };
  rows.push(
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "reservations",
      unit: "/s",
      value: node.perS,
      ...peer("redis-benchmark EVALSHA unpipelined", floor),
    }),
  );
  rows.push(
    benchRow({
      system: SYSTEM,
      scenario,
      metric: "reservations vs -P 16",
      unit: "/s",
      value: node.perS,
      ...peer("redis-benchmark EVALSHA -P 16", floorP16),
    }),
  );
  rows.push(benchRow({ system: SYSTEM, scenario, metric: "p99", unit: "ms", value: node.p99Ms }));
  const batchedScenario = `reserve script batched across ${callers} callers (= c × P), stock ≫ attempts`;
  rows.push(
    benchRow({
      system: SYSTEM,
      scenario: batchedScenario,
      metric: "reservations vs -P 16 (best of 3 alternated)",
      unit: "/s",
      value: batched.perS,
      ...peer("redis-benchmark EVALSHA -P 16", floorP16),
    }),
  );
  rows.push(
    benchRow({ system: SYSTEM, scenario: batchedScenario, metric: "p99", unit: "ms", value: batched.p99Ms }),
  );
  rows.push(
    benchRow({
      system: SYSTEM,
      scenario: batchedScenario,
      metric: "holds per script call",
      unit: "count",
      value: batchStats.items / Math.max(1, batchStats.batches),
      direction: "higher-is-better",
    }),
  );

  const counters: StockCounter[] = [
    new PessimisticCounter(t.db),
    new OptimisticCounter(t.db, { maxRetries: 100_000 }),
    new ConditionalCounter(t.db),
    new ScriptCounter(t.stock, { holdTtlMs: 600_000 }),
  ];
  for (const counter of counters) {
    const saleId = "strategies";
    await resetStockRow(t.db, saleId, args.strategyStock);
    await t.stock.restore(saleId, {
      epoch: Date.now(),
      available: args.strategyStock,
      carried: [],
      recheckMs: 600_000,
    });
    let retries = 0;
    let taken = 0;
    benchLog(
      `FS-06: ${counter.strategy}, ${args.strategyAttempts} attempts for ${args.strategyStock}, c=${args.clients}`,
    );
    const r = await closedLoop(args.strategyAttempts, args.clients, async () => {
      const x = await counter.take(saleId, 1);
      retries += x.retries;
      if (x.taken) taken += 1;
    });
    if (taken !== args.strategyStock)
      throw new Error(`${counter.strategy} sold ${taken} of ${args.strategyStock}`);
    const s = `FS-06 ${counter.strategy}: ${args.strategyAttempts} attempts for ${args.strategyStock}, c=${args.clients}`;
    rows.push(benchRow({ system: SYSTEM, scenario: s, metric: "attempts", unit: "/s", value: r.perS }));
    rows.push(benchRow({ system: SYSTEM, scenario: s, metric: "p99", unit: "ms", value: r.p99Ms }));
    rows.push(
      benchRow({
        system: SYSTEM,
        scenario: s,
        metric: "retries",
        unit: "count",
        value: retries,
        direction: "lower-is-better",
      }),
    );
  }
  rows.push(...(await endToEnd(t, args)));
  rows.push(...(await drain(t, args)));
  process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
}

/** FS-15's drain ceiling against the payments service (bench/drain-ceiling.ts); --drain-seconds 0 skips it. */
function drain(t: Target, args: BenchArgs): Promise<BenchResult[]> {
  if (args.drainSeconds === 0) return Promise.resolve([]);
  return drainCeiling(t, {
    pgUrl: t.pgUrl,
    rates: args.drainRates,
    seconds: args.drainSeconds,
    maxInFlight: args.drainInFlight,
    sagaClients: args.drainSagaClients,
    sagaMs: args.drainSagaMs,
  });
}

/** The 100k/5k sale end to end (bench/sale-end-to-end.ts); skipped with --e2e-tickets 0. */
function endToEnd(t: Target, args: BenchArgs): Promise<BenchResult[]> {
  if (args.e2eTickets === 0) return Promise.resolve([]);
  return saleEndToEnd(t, {
    entrants: args.e2eEntrants,
    tickets: args.e2eTickets,
    capacityPerS: args.e2eCapacity,
  });
}

export const benchProgram: BenchProgram<BenchArgs, Target> = {
  name: SYSTEM,
  parseArgs: (argv) => cli.parse(argv),
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget,
  run,
};

export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
