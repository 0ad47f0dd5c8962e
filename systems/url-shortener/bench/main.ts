/**
 * `casebook bench url-shortener` (issue 18's bench), one run, same machine:
 *
 * 1. Redirects/s of one cached code (Debian's `wrk`, its own process) — ours with click capture
 *    on and off, against the floor of Node's HTTP stack (bench/floor-302.ts: a bare `node:http`
 *    fixed 302) and nginx `return 302` (1 worker). Goals: ≥ 0.8× the Node floor with capture
 *    on; capture costs ≤ 10%.
 * 2. p99 from lab's open-loop generator, in two processes of its own (never this one, never a
 *    server's: lab's http-open-loop-processes.ts, histograms merged) at 70% of each
 *    one's measured maximum, on wrk's connections opened before the first send (a fixed pool,
 *    half in each process: the concurrency the maximum was measured at), capped by what the
 *    generator itself can send (`late`/`dropped` say when it could not).
 * 1b. The same code with a new visitor on every request (VISITORS user agents cycled): click
 *    capture on and off. Clicks equal in every field within one second are folded — by the
 *    buffer when a visit repeats the newest entry (src/domain/click-buffer.ts), by the encoder
 *    within a batch (src/domain/click-record.ts ClickEncoder) — so one wrk client hammering one
 *    code costs the click log about a row a second; here no two clicks fold, every click is a
 *    row: capture's cost when folding cannot help.
 * 3. Zipf(1.0) over `--links` links (1,000,000 by default, seeded straight into the store, then
 *    vacuumed as autovacuum would have) with the service's default LRU of 100,000 entries:
 *    redirects/s, capture on and off, and the LRU's hit ratio (from the service's /metrics).
 * 4. Links created/s by 4 writers, the counter scheme against the hash scheme (the store's
 *    lookups per code): in this process on PGlite in memory, 4 concurrent writers.
 *
 * The wrk runs of 1, 1b and 3 go in `--repeats` interleaved rounds (floor, nginx, ours with
 * capture on, ours with capture off — both services up side by side, each on its own copy of
 * the seeded store): this machine's speed drifts by ±30% between two 5 s runs of the same
 * server, so every figure and goal is the rounds' median, and a slow stretch falls on all four
 * alike. The open loops run at 70% of those medians. Scenario by scenario — 1's rounds, the
 * open loops, 1b's, 3's — so a new-visitor run's click flood (rows the click log's threads
 * insert and roll up for a while after) never shares the cores with a cached-code run.
 *
 * Markdown table on stdout (JSON lines with --json), progress on stderr.
 *
 * @example
 * // node systems/url-shortener/bench/main.ts --duration-s 5 --links 1000000
 */
import { randomBytes } from "node:crypto";
import { cp, mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { defineBenchArgs, flag } from "@casebook/lab/bench-args";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, benchRow, median, renderBench } from "@casebook/lab/bench-report";
import {
  type HttpOpenLoop,
  type HttpOpenLoopRun,
  startHttpOpenLoop,
} from "@casebook/lab/http-open-loop-processes";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { runWrk, type WrkRun, writeCyclingScript } from "@casebook/lab/wrk-run";
import { CODE_SPACE } from "../src/domain/base62.ts";
import { BlockAllocator } from "../src/domain/counter-blocks.ts";
import { CounterCodes } from "../src/domain/counter-codes.ts";
import { FeistelPermutation, KEY_BYTES } from "../src/domain/feistel-permutation.ts";
import { hashCode } from "../src/domain/hash-codes.ts";
import { errors } from "../src/errors.ts";
import { LinkRepository, type NewLink } from "../src/store/link-repository.ts";
import { migrateShortenerStore } from "../src/store/migrate.ts";
import { SqlCounter } from "../src/store/sql-counter.ts";

const SYSTEM = "url-shortener";
const serviceEntry = new URL("../src/main.ts", import.meta.url);
const floorEntry = new URL("./floor-302.ts", import.meta.url);
const ADMIN_TOKEN = "bench-admin-token-0123456789abcdef";
/** The service's default domain: links seeded for the zipf run live on it. */
const DOMAIN = "localhost:8109";
const NODE_FLOOR = "node:http fixed 302";
const NGINX = "nginx return 302 (1 worker)";
const CONNECTIONS = 50;
/** Zipf paths pre-sampled for wrk's script (it cycles through them from a random start per thread). */
const ZIPF_SAMPLES = 300_000;
/** Distinct user agents of the "new visitor per request" run: more than wrk sends in a run, so none repeats within a second. */
const VISITORS = 200_000;

export interface BenchArgs {
  readonly help: boolean;
  readonly json: boolean;
  readonly durationS: number;
  readonly links: number;
  readonly creates: number;
  readonly repeats: number;
}

const cli = defineBenchArgs({
  flags: {
    durationS: flag.integer({ min: 1, max: 600, default: 5, help: "seconds of each wrk run" }),
    links: flag.integer({ min: 1_000, max: 5_000_000, default: 1_000_000, help: "links of the zipf run" }),
    creates: flag.integer({ min: 100, max: 1_000_000, default: 8_000, help: "links created per scheme" }),
    repeats: flag.integer({
      min: 1,
      max: 20,
      default: 3,
      help: "interleaved rounds of every wrk run (figures and goals are the rounds' medians)",
    }),
    json: flag.json("one JSON object per line instead of the table"),
    help: flag.help(),
  },
  invalid: (detail, flagName, cause) =>
    errors.create("BENCH_ARGS_INVALID", { detail, fields: { flag: flagName }, cause }),
});

export const benchHelp = `url-shortener bench — redirects at the HTTP stack's limit, clicks off the path

Usage
  npx casebook bench url-shortener [options]

Scenarios (one run, same machine; wrk from Debian, installed when missing; the wrk runs go in
--repeats interleaved rounds — floor, nginx, ours capture on, ours capture off — and every
figure is the rounds' median):
  cached code    redirects/s of one cached code, capture on/off, vs a bare node:http 302 and nginx return 302
  new visitors   the same code, a new visitor (user agent) on every request: capture on/off, no click folded
  open loop      p99 at 70% of each one's median wrk maximum (lab's open-loop generator)
  zipf           zipf(1.0) over --links links, LRU 100,000 entries: redirects/s and hit ratio, capture on/off
  creates        links/s by 4 writers, counter scheme vs hash scheme (lookups per code)

Options
${cli.flagHelp()}
`;

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  return cli.parse(argv);
}

interface Targets {
  readonly dir: string;
  readonly floor: ServerProcess;
  readonly nginx: SpawnedNginx;
  readonly load: HttpOpenLoop;
  close(): Promise<void>;
}

async function openTargets(): Promise<Targets> {
  const dir = await mkdtemp(join(tmpdir(), "casebook-us-bench-"));
  const floor = await startServerProcess({ name: "node floor", entry: floorEntry, env: {} });
  const nginx = await spawnNginx({
    http: (port) =>
      `server { listen 127.0.0.1:${port}; location = /healthz { return 200 "ok\\n"; } location / { add_header Cache-Control "max-age=300"; return 302 https://example.com/target; } }`,
    readyPath: "/healthz",
  });
  const load = await startHttpOpenLoop({ processes: LOAD_PROCESSES });
  return {
    dir,
    floor,
    nginx,
    load,
    close: async () => {
      await Promise.allSettled([floor.stop(), nginx.stop(), load.close()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** 1M links straight into the store (the API would take minutes): codes zz1…zzN, one workspace. */
async function seedLinks(dataDir: string, count: number): Promise<void> {
  const db = await openDatabase({ system: SYSTEM, dataDir, env: {} });
  try {
    await migrateShortenerStore(db);
    await db.query("INSERT INTO workspaces (id, name, created_at) VALUES ('bench', 'bench', now())");
    await db.query(
      `INSERT INTO links (domain, code, workspace_id, target, created_at, updated_at)
       SELECT $1, 'zz' || g, 'bench', 'https://example.com/p/' || g, now(), now() FROM generate_series(1, $2) g`,
      [DOMAIN, count],
    );
    // A bulk-loaded table as a live store would have it after autovacuum (PGlite runs none):
    // hint bits set and statistics taken, so the first read of each page does not write it.
    await db.exec("VACUUM (FREEZE, ANALYZE) links");
  } finally {
    await db.close();
  }
}

/** Ranks 1..n drawn with P(k) ∝ 1/k (zipf, s = 1), by inverse CDF. */
function zipfSample(n: number, samples: number): number[] {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 1; k <= n; k++) {
    sum += 1 / k;
    cdf[k - 1] = sum;
  }
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const u = Math.random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    out.push(lo + 1);
  }
  return out;
}

async function zipfScript(dir: string, links: number): Promise<string> {
  return writeCyclingScript(
    dir,
    zipfSample(links, ZIPF_SAMPLES).map((rank) => ({ path: `/zz${rank}` })),
  );
}

/** One path, a distinct browser user agent per request: every click a visitor of its own. */
async function visitorsScript(dir: string, path: string): Promise<string> {
  return writeCyclingScript(
    dir,
    Array.from({ length: VISITORS }, (_, i) => ({
      path,
      headers: { "user-agent": `Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.${i} Safari/537.36` },
    })),
  );
}

async function startOurs(dataDir: string, capture: boolean): Promise<ServerProcess> {
  return startServerProcess({
    name: `url-shortener (capture ${capture ? "on" : "off"})`,
    entry: serviceEntry,
    // Two PGlites start (the service's and the click log's, on two threads): at load ~20 on two
    // cores that took more than lab's default 30 s.
    readyTimeoutMs: 120_000,
    env: {
      CASEBOOK_DATA: dataDir,
      URL_SHORTENER_ADMIN_TOKEN: ADMIN_TOKEN,
      URL_SHORTENER_CLICKS: String(capture),
      URL_SHORTENER_CREATE_RATE_PER_S: "100000",
      URL_SHORTENER_CREATE_BURST: "1000000",
    },
  });
}

async function readCacheCounts(url: string): Promise<{ hit: number; miss: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const count = (result: string) =>
    Number(
      new RegExp(`^url_shortener_read_cache_requests_total\\{result="${result}"\\} (\\d+)`, "m").exec(
        text,
      )?.[1] ?? 0,
    );
  return { hit: count("hit"), miss: count("miss") };
}

/** Open-loop generator processes (lab's http-open-loop-child.ts): never this process, never the server's. */
const LOAD_PROCESSES = 2;

/** p99 of an open loop at `ratePerS` of GET `url` (keep-alive sockets, from the generator processes). */
async function openLoopP99(load: HttpOpenLoop, url: string, ratePerS: number): Promise<HttpOpenLoopRun> {
  const target = new URL(url);
  const run = await load.run({
    url: target.origin,
    requests: [{ path: target.pathname }],
    okStatuses: [302],
    ratePerS,
    durationMs: 5_000,
    warmupMs: 1_000,
    // wrk's connections, shared by the generators and opened before the first send: the
    // concurrency each maximum was measured at (opened on demand, a busy run opened up to 256
    // per process in its first 0.5 s: the feed bench's finding, 2026-12-07).
    connections: CONNECTIONS,
  });
  benchLog(
    `open loop ${url}: asked ${run.askedPerS}/s, sent ${Math.round(run.sentPerS)}/s, ${run.late} late, ` +
      `${run.dropped} dropped, ${run.errors} errors, ${run.connectionsOpened} connections, p99 ${run.p99Ms.toFixed(1)} ms (load ${loadAverage()})`,
  );
  return run;
}

function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");
}

interface CreateRun {
  perS: number;
  lookupsPerCode: number;
  counterCalls: number;
}

/** `total` links by 4 concurrent writers on one PGlite store, with the counter or the hash scheme. */
async function createRun(scheme: "counter" | "hash", total: number): Promise<CreateRun> {
  const db = await openDatabase({ system: SYSTEM, dataDir: "memory://", env: {} });
  try {
    await migrateShortenerStore(db);
    await db.query("INSERT INTO workspaces (id, name, created_at) VALUES ('bench', 'bench', now())");
    const links = new LinkRepository(db);
    const counter = new SqlCounter(db);
    const key = randomBytes(KEY_BYTES);
    let lookups = 0;
    const allocators: BlockAllocator[] = [];
    const link = (code: string, i: number): NewLink => ({
      domain: DOMAIN,
      code,
      workspaceId: "bench",
      target: `https://example.com/w/${scheme}/${i}`,
      status: 302,
      cacheMaxAgeS: 300,
      forwardQuery: true,
      isAlias: false,
      tags: [],
      expiresAt: null,
      nowMs: Date.now(),
    });
    const writer = async (w: number) => {
      const blocks = new BlockAllocator({ counter, limit: CODE_SPACE });
      allocators.push(blocks);
      const codes = new CounterCodes(blocks, new FeistelPermutation(key));
      for (let i = w; i < total; i += 4) {
        if (scheme === "counter") {
          await links.insertGenerated(link(await codes.next(), i));
        } else {
          const made = await hashCode(`https://example.com/w/${scheme}/${i}`, {
            claim: async (code) => (await links.insertAlias(link(code, i))) !== undefined,
          });
          lookups += made.lookups;
        }
      }
    };
    const started = performance.now();
    await Promise.all([0, 1, 2, 3].map(writer));
    const seconds = (performance.now() - started) / 1_000;
    return {
      perS: total / seconds,
      lookupsPerCode: lookups / total,
      counterCalls: allocators.reduce((sum, a) => sum + a.stats.reservations, 0),
    };
  } finally {
    await db.close();
  }
}

async function createLink(url: string, apiKey: string): Promise<string> {
  const res = await fetch(`${url}/v1/links`, {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ url: "https://example.com/target" }),
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { code: string }).code;
}

async function workspaceKey(url: string): Promise<string> {
  const res = await fetch(`${url}/v1/admin/workspaces`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: `bench-${Date.now()}`, name: "bench" }),
  });
  if (res.status !== 201) throw new Error(`workspace: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { apiKey: { key: string } }).apiKey.key;
}

/** One running service of ours and what the rounds need of it. */
interface Ours {
  readonly capture: boolean;
  readonly server: ServerProcess;
  /** The one cached code's URL. */
  readonly hotUrl: string;
  /** wrk's script of the hot code with a new visitor per request. */
  readonly visitors: string;
}

async function openOurs(targets: Targets, dataDir: string, capture: boolean): Promise<Ours> {
  const server = await startOurs(dataDir, capture);
  try {
    const hot = await createLink(server.url, await workspaceKey(server.url));
    const own = join(targets.dir, `capture-${capture ? "on" : "off"}`);
    await mkdir(own, { recursive: true });
    return {
      capture,
      server,
      hotUrl: `${server.url}/${hot}`,
      visitors: await visitorsScript(own, `/${hot}`),
    };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** Every wrk run of round r, each target once (each scenario's rounds run apart: see run()). */
interface Round {
  floor: WrkRun;
  nginx: WrkRun;
  on: OursRound;
  off: OursRound;
}

interface OursRound {
  cached: WrkRun;
  visitors: WrkRun;
  zipf: WrkRun;
  hits: number;
  lookups: number;
}

async function run(targets: Targets, args: BenchArgs, json: boolean): Promise<void> {
  const rows: BenchResult[] = [];
  const row = (
    scenario: string,
    metric: string,
    unit: string,
    value: number,
    peer?: { name: string; value: number },
  ) => {
    // Counts (errors, lookups, calls) are better lower; a hit ratio higher; rates and times by their unit.
    const direction =
      unit === "count" ? "lower-is-better" : unit === "ratio" ? "higher-is-better" : undefined;
    rows.push(
      benchRow({
        system: SYSTEM,
        scenario,
        metric,
        unit,
        value,
        ...(direction ? { direction } : {}),
        ...(peer ? { peer } : {}),
      }),
    );
  };
  const wrk = (url: string, script?: string) =>
    runWrk({ url, durationS: args.durationS, connections: CONNECTIONS, ...(script ? { script } : {}) });
  let goals: string[] = [];

  benchLog(`seeding ${args.links} links for the zipf run`);
  const dataOn = join(targets.dir, "data-capture-on");
  const dataOff = join(targets.dir, "data-capture-off");
  await seedLinks(join(dataOn, SYSTEM), args.links);
  // Both services run through the rounds side by side, each on its own copy of the seeded store.
  await cp(dataOn, dataOff, { recursive: true });
  const script = await zipfScript(targets.dir, args.links);

  const floorUrl = `${targets.floor.url}/x`;
  const nginxUrl = `${targets.nginx.url}/x`;
  const on = await openOurs(targets, dataOn, true);
  let off: Ours | undefined;
  try {
    off = await openOurs(targets, dataOff, false);
    for (const ours of [on, off]) {
      benchLog(`warming ${ours.server.name}: the JIT, then the LRU with the zipf paths`);
      await runWrk({ url: ours.hotUrl, durationS: 1, connections: CONNECTIONS });
      await runWrk({ url: ours.server.url, durationS: 2, connections: CONNECTIONS, script });
    }
    const zipfRun = async (ours: Ours) => {
      const before = await readCacheCounts(ours.server.url);
      const zipf = await wrk(ours.server.url, script);
      const after = await readCacheCounts(ours.server.url);
      const hits = after.hit - before.hit;
      return { zipf, hits, lookups: hits + after.miss - before.miss };
    };
    // Interleaved rounds: a slow stretch of the machine falls on every target alike, and the
    // median of the rounds sets each figure (one 5 s run here can read 30% off the next). One
    // scenario's rounds after the other's: the new-visitor runs leave the click log ~150,000
    // rows per run to insert and roll up on its threads, which would otherwise share the two
    // cores with the next cached-code run.
    const cachedRounds: Pick<Round, "floor" | "nginx">[] = [];
    const oursCached: Record<"on" | "off", WrkRun[]> = { on: [], off: [] };
    for (let r = 1; r <= args.repeats; r++) {
      benchLog(
        `one cached code, round ${r} of ${args.repeats}: node floor, nginx, ours capture on, ours capture off`,
      );
      const floor = await wrk(floorUrl);
      const nginx = await wrk(nginxUrl);
      cachedRounds.push({ floor, nginx });
      oursCached.on.push(await wrk(on.hotUrl));
      oursCached.off.push(await wrk(off.hotUrl));
      const [onRun, offRun] = [oursCached.on.at(-1)!, oursCached.off.at(-1)!];
      benchLog(
        `round ${r}: floor ${Math.round(floor.requestsPerS)}/s, nginx ${Math.round(nginx.requestsPerS)}/s, ` +
          `ours on ${Math.round(onRun.requestsPerS)}/s, off ${Math.round(offRun.requestsPerS)}/s ` +
          `(on ${(onRun.requestsPerS / floor.requestsPerS).toFixed(2)}× the floor; load ${loadAverage()})`,
      );
    }
    const floorMax = median(cachedRounds.map((r) => r.floor.requestsPerS));
    const nginxMax = median(cachedRounds.map((r) => r.nginx.requestsPerS));
    const onCached = median(oursCached.on.map((r) => r.requestsPerS));
    const offCached = median(oursCached.off.map((r) => r.requestsPerS));
    benchLog("open loop at 70% of each median maximum");
    const openLoop = await openLoopP99(targets.load, on.hotUrl, Math.round(0.7 * onCached));
    const floorLoop = await openLoopP99(targets.load, floorUrl, Math.round(0.7 * floorMax));
    const nginxLoop = await openLoopP99(targets.load, nginxUrl, Math.round(0.7 * nginxMax));
    const visitorRuns: Record<"on" | "off", WrkRun[]> = { on: [], off: [] };
    for (let r = 1; r <= args.repeats; r++) {
      benchLog(`a new visitor per request, round ${r} of ${args.repeats}: ours capture on, ours capture off`);
      visitorRuns.on.push(await wrk(on.server.url, on.visitors));
      visitorRuns.off.push(await wrk(off.server.url, off.visitors));
    }
    const zipfRuns: Record<"on" | "off", Awaited<ReturnType<typeof zipfRun>>[]> = { on: [], off: [] };
    for (let r = 1; r <= args.repeats; r++) {
      benchLog(
        `zipf over ${args.links} links, round ${r} of ${args.repeats}: ours capture on, ours capture off`,
      );
      zipfRuns.on.push(await zipfRun(on));
      zipfRuns.off.push(await zipfRun(off));
    }
    const oursRound = (side: "on" | "off", r: number): OursRound => ({
      cached: oursCached[side][r]!,
      visitors: visitorRuns[side][r]!,
      ...zipfRuns[side][r]!,
    });
    const rounds: Round[] = cachedRounds.map((round, r) => ({
      ...round,
      on: oursRound("on", r),
      off: oursRound("off", r),
    }));
    const mid = (pick: (round: Round) => number) => median(rounds.map(pick));

    const ofRounds = `median of ${rounds.length} round${rounds.length === 1 ? "" : "s"}`;
    const cachedScenario = `one cached code, wrk c=${CONNECTIONS} ${args.durationS}s, ${ofRounds}`;
    row(cachedScenario, "redirects, capture on", "req/s", onCached, { name: NODE_FLOOR, value: floorMax });
    row(cachedScenario, "redirects, capture on", "req/s", onCached, { name: NGINX, value: nginxMax });
    row(cachedScenario, "redirects, capture on", "req/s", onCached, {
      name: "ours, capture off",
      value: offCached,
    });
    row(
      cachedScenario,
      "redirects, capture on ÷ node floor, per round",
      "ratio",
      mid((r) => r.on.cached.requestsPerS / r.floor.requestsPerS),
    );
    row(
      cachedScenario,
      "wrk p99, capture on",
      "ms",
      mid((r) => r.on.cached.p99Ms),
      {
        name: NODE_FLOOR,
        value: mid((r) => r.floor.p99Ms),
      },
    );
    const visitorsScenario = `one cached code, a new visitor per request, wrk c=${CONNECTIONS} ${args.durationS}s, ${ofRounds}`;
    const onVisitors = mid((r) => r.on.visitors.requestsPerS);
    const offVisitors = mid((r) => r.off.visitors.requestsPerS);
    row(visitorsScenario, "redirects, capture on", "req/s", onVisitors, {
      name: "ours, capture off",
      value: offVisitors,
    });
    row(visitorsScenario, "redirects, capture on", "req/s", onVisitors, {
      name: NODE_FLOOR,
      value: floorMax,
    });
    const loopScenario = "open loop at 70% of each one's median wrk maximum";
    row(
      loopScenario,
      `rate asked (ours ${Math.round(0.7 * onCached)}/s)`,
      "req/s",
      openLoop.achievedRatePerS,
      {
        name: NODE_FLOOR,
        value: floorLoop.achievedRatePerS,
      },
    );
    row(loopScenario, "latency p99", "ms", openLoop.p99Ms, { name: NODE_FLOOR, value: floorLoop.p99Ms });
    row(loopScenario, "latency p99", "ms", openLoop.p99Ms, { name: NGINX, value: nginxLoop.p99Ms });
    row(loopScenario, "late or dropped sends (generator limit)", "count", openLoop.late + openLoop.dropped);
    const zipfScenario = `zipf(1.0) over ${args.links} links, LRU 100,000, ${ofRounds}`;
    const hitRatio = (side: "on" | "off") => {
      const lookups = rounds.reduce((sum, r) => sum + r[side].lookups, 0);
      return lookups === 0 ? 0 : rounds.reduce((sum, r) => sum + r[side].hits, 0) / lookups;
    };
    row(
      zipfScenario,
      "redirects, capture on",
      "req/s",
      mid((r) => r.on.zipf.requestsPerS),
      {
        name: "ours, capture off",
        value: mid((r) => r.off.zipf.requestsPerS),
      },
    );
    row(zipfScenario, "LRU hit ratio, capture on", "ratio", hitRatio("on"));
    row(zipfScenario, "LRU hit ratio, capture off", "ratio", hitRatio("off"));
    row(
      zipfScenario,
      "wrk errors (capture on + off, every round)",
      "count",
      rounds.reduce(
        (sum, r) =>
          sum + [r.on, r.off].reduce((s, o) => s + o.cached.errors + o.visitors.errors + o.zipf.errors, 0),
        0,
      ),
    );
    const ratioFloor = onCached / floorMax;
    const cost = 1 - onCached / offCached;
    const visitorsCost = 1 - onVisitors / offVisitors;
    goals = [
      `goals (${ofRounds}): ≥ 0.8× the node floor with capture on: ${ratioFloor.toFixed(2)}× (${ratioFloor >= 0.8 ? "met" : "not met"}); capture cost ≤ 10%: ${(cost * 100).toFixed(1)}% (${cost <= 0.1 ? "met" : "not met"})`,
      `not a goal, what folding cannot help: a new visitor per request, capture cost ${(visitorsCost * 100).toFixed(1)}%, capture on ${(onVisitors / floorMax).toFixed(2)}× the node floor`,
    ];
  } finally {
    await Promise.allSettled([on.server.stop(), off?.server.stop()]);
  }

  benchLog(`creates: ${args.creates} links by 4 writers, counter vs hash`);
  const counter = await createRun("counter", args.creates);
  const hash = await createRun("hash", args.creates);
  const createScenario = `${args.creates} links, 4 writers, PGlite in memory`;
  row(createScenario, "links created", "links/s", counter.perS, { name: "hash scheme", value: hash.perS });
  row(createScenario, "store lookups per code", "count", 0, {
    name: "hash scheme",
    value: hash.lookupsPerCode,
  });
  row(createScenario, "counter calls (blocks of 1,000)", "count", counter.counterCalls);

  for (const goal of goals) benchLog(goal);
  process.stdout.write(`${renderBench(rows, json ? "json" : "markdown")}\n`);
}

export const benchProgram: BenchProgram<BenchArgs, Targets> = {
  name: SYSTEM,
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => errors.is(error, "BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: openTargets,
  run,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
