/**
 * RL-14 demo: two regions, each with its OWN redis-server, share a quota of 1000 per
 * interval (the text's 1000/min, the minute compressed to `--interval-ms`, 1 s by
 * default), split 600/400. Region a is busy throughout; b is nearly idle, then wakes
 * up; for one interval b's Redis is frozen (SIGSTOP). The rebalancer runs on real
 * timers and prints one row per tick: the shares each region enforced and the new
 * split, what each admitted and was asked, and the global total against quota + the
 * bound of quota-split.ts (the share moved at the previous tick).
 *
 *     npx casebook rate-limiter multi-region-demo [--interval-ms 1000] [--ticks 10]
 *
 * Progress goes to stderr, the table to stdout.
 */
import { systemClock } from "@casebook/kit/clock";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { type MultiRegionQuota, type RegionalLimit, regionalLimitOf } from "../src/domain/regional-limit.ts";
import {
  openRedisRegionQuotaStore,
  type QuotaKey,
  type RegionQuotaStore,
} from "../src/store/region-quota-store.ts";
import { Rebalancer, type TickReport } from "../src/workers/rebalancer.ts";

/** Bounds on the flags, so a typo cannot run for an hour. */
const maxTicks = 60;
const minIntervalMs = 200;
const maxIntervalMs = 60_000;
/** Requests of one region in one interval are sent in this many slices, spread over it. */
const slicesPerInterval = 10;
/** Bound on one region's requests in flight per slice. */
const maxConcurrency = 50;

const cli = defineBenchArgs({
  flags: {
    intervalMs: flag.integer({
      min: minIntervalMs,
      max: maxIntervalMs,
      default: 1_000,
      help: "length of one rebalancing interval (default {default}, {min}..{max})",
    }),
    ticks: flag.integer({
      min: 1,
      max: maxTicks,
      default: 10,
      help: "intervals to run (default {default}, at most {max}); region b's Redis is frozen in one of them",
    }),
    help: flag.boolean({ help: "this text" }),
  },
  helpColumn: 18,
  invalid: (detail) => new Error(detail),
});

const usage = `multi-region-demo — two regions' Redis, one quota of 1000 per interval, rebalanced (RL-14)

Usage
  npx casebook rate-limiter multi-region-demo [--interval-ms N] [--ticks N]

${cli.flagHelp()}
`;

/** Prints `problem` and the usage, and ends with exit code 2. */
function usageError(problem: string): never {
  process.stderr.write(`multi-region-demo: ${problem}\n\n${usage}`);
  process.exit(2);
}

let args: ReturnType<typeof cli.parse>;
try {
  args = cli.parse(process.argv.slice(2));
} catch (error) {
  usageError((error as Error).message);
}
if (args.help) {
  process.stdout.write(usage);
  process.exit(0);
}
const { intervalMs, ticks } = args;

const quota: MultiRegionQuota = {
  quota: 1_000,
  weights: { a: 600, b: 400 },
  intervalMs,
  minShare: 50,
  smoothing: 0.5,
};
const key: QuotaKey = { policy: "plan", subject: "api-key:42" };
/** Interval (0-based) during which b's Redis is frozen; none in runs too short to show it. */
const frozenInterval = ticks >= 3 ? Math.min(7, ticks - 2) : -1;

/** Requests each region receives in interval `i`: a busy, b nearly idle, then awake. */
function demandOf(i: number): { a: number; b: number } {
  if (i === frozenInterval) return { a: 1_500, b: 0 };
  return { a: 1_500, b: i < 4 ? 100 : 800 };
}

const log = (line: string) => process.stderr.write(`${line}\n`);
const sleepUntil = (atMs: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, atMs - performance.now())));

interface Counts {
  allowed: number;
  refused: number;
  failed: number;
}

async function drive(store: RegionQuotaStore, limit: RegionalLimit, requests: number, counts: Counts) {
  let sent = 0;
  const worker = async () => {
    while (sent < requests) {
      sent += 1;
      try {
        if ((await store.spend(key, 1, limit)).allowed) counts.allowed += 1;
        else counts.refused += 1;
      } catch {
        counts.failed += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(maxConcurrency, requests) }, worker));
}

/** Open loop: each slice is sent at its time whether or not earlier ones finished. */
async function traffic(
  services: Record<"a" | "b", RegionQuotaStore>,
  redisB: SpawnedRedis,
  startMs: number,
): Promise<void> {
  const limits = { a: regionalLimitOf(quota, "a"), b: regionalLimitOf(quota, "b") };
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < ticks; i++) {
    const demand = demandOf(i);
    for (let slice = 0; slice < slicesPerInterval; slice++) {
      // Half a slice off the boundaries, so each slice lands clearly inside its interval.
      await sleepUntil(startMs + i * intervalMs + ((slice + 0.5) * intervalMs) / slicesPerInterval);
      for (const region of ["a", "b"] as const) {
        // While b's Redis is frozen its own service cannot decide (RL-11/12 pick fail-open or
        // fail-closed there); the demo sends b nothing until the rebalancer's tick has thawed it.
        if (region === "b" && redisB.state === "paused") continue;
        const n = Math.floor(demand[region] / slicesPerInterval);
        if (n > 0) inFlight.push(drive(services[region], limits[region], n, clientCounts[region]));
      }
    }
  }
  await Promise.all(inFlight);
}

const clientCounts: Record<"a" | "b", Counts> = {
  a: { allowed: 0, refused: 0, failed: 0 },
  b: { allowed: 0, refused: 0, failed: 0 },
};

function row(report: TickReport): string {
  const q = report.quotas[0];
  if (!q) return `| ${report.tick} | (tick failed) |`;
  const share = (r: string) => `${q.sharesBefore[r] ?? "frozen"} → ${q.shares[r]}`;
  const usage = (r: string) => (q.closed[r] ? `${q.closed[r].used} / ${q.closed[r].demand}` : "—");
  const limit = q.quota + q.overshootBound;
  const note = q.skipped.length > 0 ? ` (${q.skipped.join(",")} unreachable, frozen)` : "";
  return [
    "",
    report.tick,
    share("a"),
    share("b"),
    q.held,
    usage("a"),
    usage("b"),
    q.admittedTotal,
    `${q.quota} + ${q.overshootBound} = ${limit}`,
    q.admittedTotal <= limit ? "yes" : "NO",
    `${q.status}${note}`,
    "",
  ].join(" | ");
}

async function main(): Promise<void> {
  log(`spawning two redis-server processes (region a, region b); ${ticks} ticks of ${intervalMs} ms`);
  const redisA = await spawnRedis();
  const redisB = await spawnRedis();
  const stores: RegionQuotaStore[] = [];
  const open = async (region: string, url: string, commandTimeoutMs: number) => {
    const store = await openRedisRegionQuotaStore({ region, url, commandTimeoutMs });
    stores.push(store);
    return store;
  };
  try {
    const services = { a: await open("a", redisA.url, 250), b: await open("b", redisB.url, 250) };
    const rows: string[] = [];
    const rebalancer = new Rebalancer({
      regions: [await open("a", redisA.url, 300), await open("b", redisB.url, 300)],
      quotas: [{ key, quota }],
      intervalMs,
      clock: systemClock,
      maxTicks: ticks,
      onError: (error) => log(`  rebalancer: ${(error as Error).message}`),
      onTick: (report) => {
        rows.push(row(report));
        const q = report.quotas[0];
        log(
          `tick ${report.tick}: ${q?.status} shares ${JSON.stringify(q?.shares)} (${report.durationMs.toFixed(1)} ms)`,
        );
        // Freeze b for one interval, right after the tick that opens it, and thaw it after the next.
        if (report.tick === frozenInterval) {
          log("  freezing region b's Redis (SIGSTOP) for one interval");
          redisB.pause();
        } else if (report.tick === frozenInterval + 1) {
          redisB.resume();
        }
      },
    });
    const startMs = performance.now();
    rebalancer.start();
    await Promise.all([traffic(services, redisB, startMs), rebalancer.done()]);
    printTable(rows);
  } finally {
    redisB.resume();
    await Promise.all(stores.map((store) => store.close()));
    await Promise.all([redisA.stop(), redisB.stop()]);
  }
}

function printTable(rows: string[]): void {
  console.log(
    `RL-14 multi-region quota: ${quota.quota} per ${intervalMs} ms interval (the text's 1000/min), split 600/400;`,
  );
  console.log(
    `minShare ${quota.minShare}, smoothing ${quota.smoothing}; b's Redis frozen (SIGSTOP) from tick ${frozenInterval} ` +
      `until tick ${frozenInterval + 1} has run (b sends nothing meanwhile).`,
  );
  console.log("shares: enforced in the interval → new split; usage: admitted / asked.\n");
  console.log(
    "| tick | share a | share b | held | a used / asked | b used / asked | admitted | quota + bound | within | status |",
  );
  console.log("|---:|---|---|---:|---|---|---:|---|---|---|");
  for (const line of rows) console.log(line.trim());
  const total = (r: "a" | "b") => clientCounts[r];
  console.log(
    `\nclients saw: a ${total("a").allowed} allowed / ${total("a").refused} refused / ${total("a").failed} failed; ` +
      `b ${total("b").allowed} / ${total("b").refused} / ${total("b").failed}`,
  );
}

await main();
