/**
 * RL-05 on the engines that decide: every `<algorithm>-n.lua` on real Redis, and its
 * in-process twin through the same contract, meeting stored state written AHEAD of the
 * engine's clock — what a Redis failover to a primary whose clock lags leaves behind.
 * No clock is injected into the scripts: the state is written directly (HSET / ZADD) with
 * timestamps 10 minutes past Redis's own TIME, so the script's clamp is what is tested,
 * not the pure functions the domain tests run (a script is a separate implementation:
 * `math.max(0, now - ts)` → `math.abs(now - ts)` in token-bucket-n.lua passed every test
 * before this file).
 *
 * The state is built by the domain at the future time T (spend `spent` units of a fresh
 * limit), so "what it holds" is known: a script reading it at TIME < T may admit at most
 * what was left at T (`remaining`), and nothing when it was exhausted. GCRA and the
 * sliding-window counter admit fewer when the clock is behind (the wait grows, the previous
 * weight stays full); never more.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Redis } from "ioredis";
import {
  type Algorithm,
  type AlgorithmName,
  algorithmNames,
  type Limit,
  type StoredState,
} from "../src/domain/algorithm.ts";
import { algorithms } from "../src/domain/algorithms.ts";
import { scriptsDir } from "../src/store/limiter-store.ts";
import { regionQuotaTwins, regionScriptsDir } from "../src/store/region-quota-store.ts";
import { scriptTwins } from "../src/store/script-twins.ts";
import { deleteKeys } from "./store-backends.ts";

/** How far the stored state is ahead of the engine's clock: far more than any refill needs. */
const AHEAD_MS = 600_000;
/** Calls made against the state ahead: more than the limit, so a minted unit would show. */
const CALLS = 15;

/**
 * Ten units each, restored over 100 s: the 10 minutes the state is ahead would restore them
 * all (a minted unit shows), while the seconds a loaded machine takes between two calls of
 * one test restore none (an honest refill since the last write stays out of the count).
 */
const limits: Record<AlgorithmName, Limit> = {
  "token-bucket": { algorithm: "token-bucket", capacity: 10, ratePerS: 0.1 },
  "fixed-window": { algorithm: "fixed-window", limit: 10, windowMs: 100_000 },
  "sliding-window-log": { algorithm: "sliding-window-log", limit: 10, windowMs: 100_000 },
  "sliding-window-counter": { algorithm: "sliding-window-counter", limit: 10, windowMs: 100_000 },
  "leaky-bucket": { algorithm: "leaky-bucket", queueCapacity: 10, ratePerS: 0.1 },
  gcra: { algorithm: "gcra", burst: 10, ratePerS: 0.1 },
};

interface Engine {
  runner: ScriptRunner;
  /** The same engine running src/store/scripts/region-quota/ (RL-14's per-region windows). */
  regionRunner: ScriptRunner;
  /** The engine's own clock (Redis TIME; the keyspace's clock in-process). */
  nowMs(): Promise<number>;
  /** Writes `stored` under `key` as the script would have, with a TTL. */
  write(key: string, stored: StoredState, ttlMs: number): Promise<void>;
}

const registry = await ScriptRegistry.fromDir(scriptsDir);
const regionRegistry = await ScriptRegistry.fromDir(regionScriptsDir, {
  includesDir: fileURLToPath(new URL("../src/store/scripts/includes/", import.meta.url)),
});

const engines = [
  {
    name: "in-process twin",
    embedded: true,
    open: async () => {
      const clock = new ManualClock(1_700_000_000_123);
      const keyspace = new InProcessKeyspace({ clock, maxKeys: 10_000 });
      const engine: Engine = {
        runner: new InProcessScriptRunner({ registry, twins: scriptTwins, keyspace }),
        regionRunner: new InProcessScriptRunner({
          registry: regionRegistry,
          twins: regionQuotaTwins,
          keyspace,
        }),
        nowMs: async () => clock.nowMs(),
        write: async (key, stored, ttlMs) => {
          if (stored.kind === "string") keyspace.set(key, stored.value ?? "");
          else if (stored.kind === "hash") keyspace.hset(key, { ...stored.fields });
          else for (const e of stored.entries) keyspace.zadd(key, Number(e.score), e.member);
          // The fixed window's expiry is its window's end: part of the state, written as such.
          if (stored.kind === "string" && stored.expiresAtMs !== undefined)
            keyspace.pexpireAt(key, stored.expiresAtMs);
          else keyspace.pexpire(key, ttlMs);
        },
      };
      return { subject: engine, close: async () => {} };
    },
  },
  {
    name: "redis",
    open: async (t: { skip(message?: string): void }) => {
      const url = await requireRedis(t);
      if (!url) return undefined;
      const prefix = uniqueName("rl-clock-back");
      const redis = new Redis(url, { maxRetriesPerRequest: 1, keyPrefix: `${prefix}:` });
      const engine: Engine = {
        runner: new RedisScriptRunner(redis, registry),
        regionRunner: new RedisScriptRunner(redis, regionRegistry),
        nowMs: async () => {
          const [s, us] = await redis.time();
          return Number(s) * 1000 + Math.floor(Number(us) / 1000);
        },
        write: async (key, stored, ttlMs) => {
          const multi = redis.multi();
          if (stored.kind === "string") multi.set(key, stored.value ?? "");
          else if (stored.kind === "hash") multi.hset(key, stored.fields);
          else for (const e of stored.entries) multi.zadd(key, e.score, e.member);
          if (stored.kind === "string" && stored.expiresAtMs !== undefined)
            multi.pexpireat(key, stored.expiresAtMs);
          else multi.pexpire(key, ttlMs);
          await multi.exec();
        },
      };
      return {
        subject: engine,
        close: async () => {
          redis.disconnect();
          await deleteKeys(url, `${prefix}:`);
        },
      };
    },
  },
];

type AnyAlgorithm = Algorithm<Limit, unknown>;
let sequence = 0;

/** The state after spending `spent` units one by one on a fresh limit at time `atMs`, and what it has left. */
function stateAt(algorithm: AnyAlgorithm, limit: Limit, atMs: number, spent: number) {
  let state: unknown;
  let remaining = 0;
  for (let i = 0; i < spent; i++) {
    const d = algorithm.decide(state, atMs, limit, 1, `seed-${i}`);
    assert.ok(d.allowed, `the seed spend ${i} is allowed at T`);
    state = d.state;
    remaining = d.remaining;
  }
  return { stored: algorithm.toStored(state, limit), remaining, ttlMs: algorithm.ttlMs(state, atMs, limit) };
}

/** Writes the state `spent` units into a limit at TIME + AHEAD_MS, then spends one unit CALLS times. */
async function admittedBehind(engine: Engine, name: AlgorithmName, spent: number, mode: "spend" | "each") {
  const algorithm = algorithms[name] as AnyAlgorithm;
  const limit = limits[name];
  const key = `{clock-${++sequence}}`;
  const aheadMs = (await engine.nowMs()) + AHEAD_MS;
  const { stored, remaining, ttlMs } = stateAt(algorithm, limit, aheadMs, spent);
  await engine.write(key, stored, ttlMs + AHEAD_MS);
  let admitted = 0;
  for (let i = 0; i < CALLS; i++) {
    const reply = (await engine.runner.run(
      name,
      [key],
      [mode, ...algorithm.scriptArgs(limit, 1, `call-${sequence}-${i}`)],
    )) as number[];
    assert.ok(
      reply[1]! < aheadMs,
      `the engine's clock (${reply[1]}) stayed behind the stored state (${aheadMs})`,
    );
    admitted += reply[0]!;
  }
  return { admitted, remaining };
}

contractSuite("RL-05 on the engine: stored state ahead of the engine's clock", engines, (it) => {
  for (const name of algorithmNames) {
    for (const mode of ["spend", "each"] as const) {
      it(`RL-05 ${name} (${mode}): an exhausted limit written ${AHEAD_MS / 60_000} min ahead of the engine's clock admits nothing`, async (engine) => {
        const { admitted, remaining } = await admittedBehind(engine, name, 10, mode);
        assert.equal(remaining, 0);
        assert.equal(admitted, 0, `${name} minted ${admitted} unit(s) from a clock stepping back`);
      });

      it(`RL-05 ${name} (${mode}): a limit with 3 units left, written ahead of the engine's clock, admits at most those 3`, async (engine) => {
        const { admitted, remaining } = await admittedBehind(engine, name, 7, mode);
        assert.equal(remaining, 3);
        assert.ok(admitted <= remaining, `${name} admitted ${admitted} > the ${remaining} the state held`);
      });
    }
  }

  it(`RL-05 region-spend: a region's window opened ${AHEAD_MS / 60_000} min ahead of the engine's clock, its share spent, admits nothing`, async (engine) => {
    const key = `{clock-${++sequence}}:region`;
    const share = 10;
    const aheadMs = (await engine.nowMs()) + AHEAD_MS;
    await engine.write(
      key,
      {
        kind: "hash",
        fields: {
          shareUnits: String(share),
          epoch: "1",
          windowStartMs: String(aheadMs),
          admitted: String(share),
          refused: "0",
        },
      },
      2 * AHEAD_MS,
    );
    // cost 1, static share 10, a 100 s interval, windows close by themselves after 200 s.
    const args = [1, share, 100_000, 200_000];
    let admitted = 0;
    for (let i = 0; i < CALLS; i++) {
      const reply = (await engine.regionRunner.run("region-spend", [key], args)) as number[];
      assert.ok(reply[1]! < aheadMs, "the engine's clock stayed behind the stored window");
      admitted += reply[0]!;
    }
    assert.equal(
      admitted,
      0,
      `a window ahead of the clock was reopened: ${admitted} admitted over the spent share`,
    );
  });
});
