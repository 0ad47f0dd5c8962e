/**
 * Differential test: every `<algorithm>-n.lua` against its pure domain function, on a
 * real Redis. The script decides with the server's TIME and returns the `nowMs` it used;
 * the domain function, fed that same `nowMs` and the state the script saw, must return
 * the identical decision and leave the identical state. No test-only clock override
 * exists in the scripts: a caller's clock must never decide.
 *
 * Each step runs in one MULTI: read the keys (and their PEXPIRETIME: the fixed window's end
 * is its key's expiry), EVAL, read the keys again, PTTL — so the "before" state is exactly
 * what the script read and nothing else runs in between.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { engineFree, requireRedis, uniqueName } from "@casebook/lab/test-engines";
import fc from "fast-check";
import { Redis } from "ioredis";
import {
  type Algorithm,
  type AlgorithmName,
  algorithmNames,
  decideAll,
  decideEach,
  type Limit,
  maxCost,
  type StoredState,
} from "../src/domain/algorithm.ts";
import { algorithms } from "../src/domain/algorithms.ts";
import { scriptsDir } from "../src/store/limiter-store.ts";
import { storedKind } from "../src/store/script-twins.ts";
import { limitArbitraries } from "./limit-arbitraries.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const RUNS_PER_ALGORITHM = 20;
const MAX_STEPS = 20;
/**
 * Engine-side slack between the script's PEXPIRE and the PTTL read in the same MULTI: at least
 * this, and never less than the MULTI's round trip (a loaded machine can stretch the EXEC).
 */
const PTTL_SLACK_MS = 5;
/** What the random runs exercised, per algorithm: asserted below so a run can't pass vacuously. */
const exercised = new Map<string, { allowed: number; refused: number; refunds: number; multiKey: number }>();
/** The same for mode "each": a repeat after a write and a call mixing allows and refusals must occur. */
const exercisedEach = new Map<
  string,
  { allowed: number; refused: number; repeatAfterWrite: number; mixed: number }
>();

type AnyAlgorithm = Algorithm<Limit, unknown>;

/** The scripts as Redis runs them: assembled by the registry, includes inlined. */
const scripts = await ScriptRegistry.fromDir(scriptsDir);

function scriptSource(algorithm: AnyAlgorithm): string {
  return scripts.get(algorithm.name).lua;
}

interface Step {
  /** Which of the run's keys this call touches (bit i = key i); 0 means key 0 alone. */
  keyMask: number;
  costPick: number;
  /** 0 (one call in five) refunds the last allowed spend instead, on the same keys. */
  refundRoll: number;
  pauseMs: number;
}

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  keyMask: fc.integer({ min: 0, max: 7 }),
  costPick: fc.nat({ max: 100 }),
  refundRoll: fc.nat({ max: 4 }),
  pauseMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
});

/** Two commands per key: its state, then its PEXPIRETIME (read by `storedAt`). */
function readCommands(multi: ReturnType<Redis["multi"]>, algorithm: AnyAlgorithm, key: string) {
  const kind = storedKind(algorithm.name);
  if (kind === "zset") multi.zrange(key, "0", "-1", "WITHSCORES");
  else if (kind === "string") multi.get(key);
  else multi.hgetall(key);
  multi.call("PEXPIRETIME", key);
}

function toStored(algorithm: AnyAlgorithm, raw: unknown, expireTime: number): StoredState {
  const kind = storedKind(algorithm.name);
  if (kind === "string") {
    const expiresAtMs = expireTime >= 0 ? expireTime : undefined;
    return { kind, value: (raw as string | null) ?? undefined, expiresAtMs };
  }
  if (kind === "hash") return { kind, fields: raw as Record<string, string> };
  const flat = raw as string[];
  const entries = [];
  for (let i = 0; i < flat.length; i += 2) entries.push({ member: flat[i]!, score: flat[i + 1]! });
  return { kind: "zset", entries };
}

/** The domain state as Redis would hold it: an empty log is no key. */
function normalized(algorithm: AnyAlgorithm, state: unknown, limit: Limit): unknown {
  return state === undefined ? undefined : algorithm.fromStored(algorithm.toStored(state, limit), limit);
}

/** The state read by `readCommands` at result `at` (the state, then its PEXPIRETIME). */
function storedAt(algorithm: AnyAlgorithm, results: [Error | null, unknown][], at: number, limit: Limit) {
  return algorithm.fromStored(toStored(algorithm, results[at]![1], Number(results[at + 1]![1])), limit);
}

/** Runs a MULTI and returns its results with the slack its PTTL reads are allowed. */
async function execTimed(multi: ReturnType<Redis["multi"]>) {
  const started = performance.now();
  const results = await multi.exec();
  const slackMs = Math.max(PTTL_SLACK_MS, Math.ceil(performance.now() - started) + 1);
  assert.ok(results, "MULTI aborted");
  for (const [error] of results) assert.ifError(error);
  return { results, slackMs };
}

/**
 * A key read back after a call holds `want.state` (as Redis would hold it), and when the call
 * wrote it its PTTL is `want.ttlMs`, less at most the time the MULTI took (`slackMs`).
 */
function assertKeyAfter(
  algorithm: AnyAlgorithm,
  label: string,
  got: { state: unknown; pttl: number },
  want: { state: unknown; ttlMs: number; written: boolean; limit: Limit },
  slackMs: number,
): void {
  const state = normalized(algorithm, want.state, want.limit);
  if (got.state === undefined && state !== undefined && want.ttlMs <= slackMs) {
    // A TTL of a few ms may run out before the read-back; expiry changes no decision (RL-06 property).
    assert.equal(got.pttl, -2);
    return;
  }
  assert.deepEqual(got.state, state, `state of ${label}`);
  if (!want.written || state === undefined) return;
  const { ttlMs } = want;
  assert.ok(got.pttl <= ttlMs && got.pttl > ttlMs - slackMs, `PTTL ${got.pttl} vs ttl ${ttlMs} (${label})`);
}

interface Call {
  keys: string[];
  limits: Limit[];
  cost: number;
  requestId: string;
  mode: "spend" | "refund";
}

/** Runs one call in a MULTI and checks it against the domain; returns whether it was allowed. */
async function checkCall(
  redis: Redis,
  algorithm: AnyAlgorithm,
  script: string,
  call: Call,
): Promise<boolean> {
  const argv = [
    call.mode,
    ...call.limits.flatMap((limit) => algorithm.scriptArgs(limit, call.cost, call.requestId)),
  ];
  const multi = redis.multi();
  for (const key of call.keys) readCommands(multi, algorithm, key);
  multi.eval(script, call.keys.length, ...call.keys, ...argv);
  for (const key of call.keys) readCommands(multi, algorithm, key);
  for (const key of call.keys) multi.pttl(key);
  const { results, slackMs } = await execTimed(multi);
  const n = call.keys.length;
  const value = (i: number) => results[i]![1];
  const before = call.keys.map((_, i) => storedAt(algorithm, results, 2 * i, call.limits[i]!));
  const reply = value(2 * n) as number[];
  const afterStates = call.keys.map((_, i) =>
    storedAt(algorithm, results, 2 * n + 1 + 2 * i, call.limits[i]!),
  );
  const pttls = call.keys.map((_, i) => value(4 * n + 1 + i) as number);
  const nowMs = reply[1]!;

  let expected: unknown[];
  let written: boolean;
  if (call.mode === "refund") {
    assert.deepEqual(reply, [1, nowMs, 0, 0]);
    expected = before.map((state, i) =>
      algorithm.refund(state, nowMs, call.limits[i]!, call.cost, call.requestId),
    );
    written = true;
  } else {
    const calls = before.map((state, i) => ({
      state,
      limit: call.limits[i]!,
      cost: call.cost,
      requestId: call.requestId,
    }));
    const multiDecision = decideAll(algorithm, nowMs, calls);
    const perKey = multiDecision.decisions.flatMap((d) => [d.allowed ? 1 : 0, d.remaining, d.resetMs]);
    assert.deepEqual(reply, [
      multiDecision.allowed ? 1 : 0,
      nowMs,
      multiDecision.retryAfterMs,
      multiDecision.delayMs,
      ...perKey,
    ]);
    expected = multiDecision.allowed ? multiDecision.decisions.map((d) => d.state) : before;
    written = multiDecision.allowed;
  }
  call.keys.forEach((_, i) => {
    const ttlMs = expected[i] === undefined ? 0 : algorithm.ttlMs(expected[i], nowMs, call.limits[i]!);
    const want = { state: expected[i], ttlMs, written, limit: call.limits[i]! };
    assertKeyAfter(
      algorithm,
      `key ${i} (${call.mode})`,
      { state: afterStates[i], pttl: pttls[i]! },
      want,
      slackMs,
    );
  });
  const counts = exercised.get(algorithm.name) ?? { allowed: 0, refused: 0, refunds: 0, multiKey: 0 };
  if (call.mode === "refund") counts.refunds++;
  else if (written) counts.allowed++;
  else counts.refused++;
  if (call.keys.length > 1) counts.multiKey++;
  exercised.set(algorithm.name, counts);
  return written && call.mode === "spend";
}

/** One request of a mode-"each" call: its key (index into the run's keys), limit, cost and id. */
interface EachItem {
  key: string;
  limit: Limit;
  cost: number;
  requestId: string;
}

/**
 * Runs one mode-"each" call in a MULTI (read every distinct key, EVAL, read them again, PTTL)
 * and checks it against decideEach: the reply, and each key's final state and TTL (those of
 * the last call on it that allowed). Returns the reply.
 */
async function checkEach(
  redis: Redis,
  algorithm: AnyAlgorithm,
  script: string,
  items: readonly EachItem[],
): Promise<number[]> {
  const distinct = [...new Set(items.map((item) => item.key))];
  const argv = [
    "each",
    ...items.flatMap((item) => algorithm.scriptArgs(item.limit, item.cost, item.requestId)),
  ];
  // One limit per key: the run gives each of its keys one limit.
  const limitOf = (key: string) => items.find((item) => item.key === key)!.limit;
  const multi = redis.multi();
  for (const key of distinct) readCommands(multi, algorithm, key);
  multi.eval(script, items.length, ...items.map((item) => item.key), ...argv);
  for (const key of distinct) readCommands(multi, algorithm, key);
  for (const key of distinct) multi.pttl(key);
  const { results, slackMs } = await execTimed(multi);
  const d = distinct.length;
  const value = (i: number) => results[i]![1];
  const before = new Map(distinct.map((key, i) => [key, storedAt(algorithm, results, 2 * i, limitOf(key))]));
  const reply = value(2 * d) as number[];
  const nowMs = reply[1]!;
  const calls = items.map((item) => ({ ...item, state: before.get(item.key) }));
  const decisions = decideEach(algorithm, nowMs, calls);
  const allowedCount = decisions.filter((decision) => decision.allowed).length;
  const perKey = decisions.flatMap((x) => [
    x.allowed ? 1 : 0,
    x.remaining,
    x.resetMs,
    x.retryAfterMs,
    x.delayMs,
  ]);
  assert.deepEqual(reply, [allowedCount, nowMs, 0, 0, ...perKey]);
  distinct.forEach((key, i) => {
    const lastWrite = decisions.findLastIndex((x, j) => x.allowed && items[j]!.key === key);
    const limit = limitOf(key);
    const want =
      lastWrite === -1
        ? { state: before.get(key), ttlMs: 0, written: false, limit }
        : { state: decisions[lastWrite]!.state, ttlMs: decisions[lastWrite]!.ttlMs, written: true, limit };
    const got = {
      state: storedAt(algorithm, results, 2 * d + 1 + 2 * i, limit),
      pttl: value(4 * d + 1 + i) as number,
    };
    assertKeyAfter(algorithm, `${key} (each)`, got, want, slackMs);
  });
  const counts = exercisedEach.get(algorithm.name) ?? {
    allowed: 0,
    refused: 0,
    repeatAfterWrite: 0,
    mixed: 0,
  };
  counts.allowed += allowedCount;
  counts.refused += items.length - allowedCount;
  counts.repeatAfterWrite += items.filter((item, j) =>
    decisions.slice(0, j).some((x, k) => x.allowed && items[k]!.key === item.key),
  ).length;
  if (allowedCount > 0 && allowedCount < items.length) counts.mixed++;
  exercisedEach.set(algorithm.name, counts);
  return reply;
}

const eachStepArbitrary = fc.record({
  /** 1–8 requests, each on one of the run's 3 keys: repeats within a call are the point. */
  requests: fc.array(fc.record({ keyIndex: fc.nat({ max: 2 }), costPick: fc.nat({ max: 100 }) }), {
    minLength: 1,
    maxLength: 8,
  }),
  pauseMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
});

describe("Lua scripts conform to the domain functions on real Redis", () => {
  let redis: Redis | undefined;
  let skipReason: string | undefined;
  const prefix = uniqueName("rl-lua");
  const touched = new Set<string>();

  before(async () => {
    const url = await requireRedis({ skip: (message) => (skipReason = message ?? "Redis unavailable") });
    if (!url) return;
    redis = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2_000, commandTimeout: 5_000 });
  });

  after(async () => {
    if (!redis) return;
    const keys = [...touched];
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
    await redis.quit();
  });

  for (const name of algorithmNames) {
    test(`${name}: random call sequences (1–3 keys, spend and refund) match the domain exactly`, async (t) => {
      if (engineFree(t)) return;
      if (!redis) return t.skip(skipReason);
      const client = redis;
      const algorithm = algorithms[name] as unknown as AnyAlgorithm;
      const script = scriptSource(algorithm);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(limitArbitraries[name], { minLength: 3, maxLength: 3 }),
          fc.array(stepArbitrary, { minLength: 1, maxLength: MAX_STEPS, size: "large" }),
          async (limits, steps) => {
            run++;
            const keys = limits.map((_, i) => `${prefix}:{u42}:${name}:${run}:k${i}`);
            for (const key of keys) touched.add(key);
            let last: { indexes: number[]; cost: number; requestId: string } | undefined;
            for (const [index, step] of steps.entries()) {
              if (step.pauseMs > 0) await sleep(step.pauseMs); // lets the engine clock move; no event to await
              const indexes = [0, 1, 2].filter((i) => step.keyMask & (1 << i));
              const chosen = indexes.length > 0 ? indexes : [0];
              if (step.refundRoll === 0 && last !== undefined) {
                const call = {
                  keys: last.indexes.map((i) => keys[i]!),
                  limits: last.indexes.map((i) => limits[i]!),
                  cost: last.cost,
                  requestId: last.requestId,
                  mode: "refund" as const,
                };
                await checkCall(client, algorithm, script, call);
                last = undefined;
                continue;
              }
              const cost = 1 + (step.costPick % Math.min(...chosen.map((i) => maxCost(limits[i]!))));
              const requestId = `req-${run}-${index}`;
              const call = {
                keys: chosen.map((i) => keys[i]!),
                limits: chosen.map((i) => limits[i]!),
                cost,
                requestId,
                mode: "spend" as const,
              };
              if (await checkCall(client, algorithm, script, call))
                last = { indexes: chosen, cost, requestId };
            }
            await client.del(...keys);
          },
        ),
        { seed: SEED, numRuns: RUNS_PER_ALGORITHM },
      );
      const counts = exercised.get(name);
      t.diagnostic(JSON.stringify(counts));
      assert.ok(
        counts && counts.allowed > 10 && counts.refused > 10 && counts.refunds > 3 && counts.multiKey > 10,
      );
    });
  }

  for (const name of algorithmNames) {
    test(`${name}: random "each" calls (1–8 requests over 3 keys, repeats included) match decideEach exactly`, async (t) => {
      if (engineFree(t)) return;
      if (!redis) return t.skip(skipReason);
      const client = redis;
      const algorithm = algorithms[name] as unknown as AnyAlgorithm;
      const script = scriptSource(algorithm);
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(limitArbitraries[name], { minLength: 3, maxLength: 3 }),
          fc.array(eachStepArbitrary, { minLength: 1, maxLength: MAX_STEPS, size: "large" }),
          async (limits, steps) => {
            run++;
            const keys = limits.map((_, i) => `${prefix}:each:${name}:${run}:k${i}`);
            for (const key of keys) touched.add(key);
            for (const [index, step] of steps.entries()) {
              if (step.pauseMs > 0) await sleep(step.pauseMs); // lets the engine clock move; no event to await
              const items = step.requests.map(({ keyIndex, costPick }, j) => ({
                key: keys[keyIndex]!,
                limit: limits[keyIndex]!,
                cost: 1 + (costPick % maxCost(limits[keyIndex]!)),
                requestId: `req-${run}-${index}-${j}`,
              }));
              await checkEach(client, algorithm, script, items);
            }
            await client.del(...keys);
          },
        ),
        { seed: SEED, numRuns: RUNS_PER_ALGORITHM },
      );
      const counts = exercisedEach.get(name);
      t.diagnostic(JSON.stringify(counts));
      assert.ok(
        counts &&
          counts.allowed > 30 &&
          counts.refused > 30 &&
          counts.repeatAfterWrite > 30 &&
          counts.mixed > 10,
      );
    });
  }

  /** Limits whose middle key is exhausted by one full-cost call and stays so for minutes. */
  const slowLimits: Record<AlgorithmName, Limit> = {
    "token-bucket": { algorithm: "token-bucket", capacity: 2, ratePerS: 0.01 },
    "fixed-window": { algorithm: "fixed-window", limit: 2, windowMs: 1_000_000_000 },
    "sliding-window-log": { algorithm: "sliding-window-log", limit: 2, windowMs: 600_000 },
    "sliding-window-counter": { algorithm: "sliding-window-counter", limit: 2, windowMs: 1_000_000_000 },
    "leaky-bucket": { algorithm: "leaky-bucket", queueCapacity: 2, ratePerS: 0.01 },
    gcra: { algorithm: "gcra", burst: 2, ratePerS: 0.01 },
  };

  for (const name of algorithmNames) {
    test(`RL-10 ${name}: user AND ip AND route under {u42} — one refuses, none is written`, async (t) => {
      if (engineFree(t)) return;
      if (!redis) return t.skip(skipReason);
      const algorithm = algorithms[name] as unknown as AnyAlgorithm;
      const script = scriptSource(algorithm);
      const limit = slowLimits[name];
      const [user, ip, route] = ["user:42", "ip:1.2.3.4", "route:/payments"].map(
        (k) => `${prefix}:{u42}:${name}:${k}`,
      );
      for (const key of [user!, ip!, route!]) touched.add(key);
      const spend = (keys: string[], cost: number, requestId: string) =>
        checkCall(redis!, algorithm, script, {
          keys,
          limits: keys.map(() => limit),
          cost,
          requestId,
          mode: "spend",
        });
      assert.equal(await spend([ip!], maxCost(limit), "exhaust-ip"), true);
      const ipBefore = await redis.dump(ip!);
      assert.equal(await spend([user!, ip!, route!], 1, "both"), false);
      assert.equal(await redis.exists(user!, route!), 0, "the passing keys were not written");
      assert.deepEqual(await redis.dump(ip!), ipBefore, "the refusing key was not written");
      assert.equal(await spend([user!, route!], 1, "without-ip"), true);
      assert.equal(await redis.exists(user!, route!), 2);
    });
  }

  for (const name of algorithmNames) {
    test(`${name} "each": independent decisions in order — a repeat sees the write before it, a refusal stops nothing`, async (t) => {
      if (engineFree(t)) return;
      if (!redis) return t.skip(skipReason);
      const algorithm = algorithms[name] as unknown as AnyAlgorithm;
      const limit = slowLimits[name]; // 2 units, restored only after minutes
      const [a, b, c] = ["a", "b", "c"].map((k) => `${prefix}:each-order:${name}:${k}`);
      for (const key of [a!, b!, c!]) touched.add(key);
      const items = [a!, b!, a!, a!, c!].map((key, j) => ({ key, limit, cost: 1, requestId: `order-${j}` }));
      const reply = await checkEach(redis, algorithm, scriptSource(algorithm), items);
      assert.equal(reply[0], 4, "allowedCount");
      assert.deepEqual(
        items.map((_, j) => reply[4 + 5 * j]),
        [1, 1, 1, 0, 1],
        "a's third request is refused; c after it is still decided and allowed",
      );
      assert.ok(reply[4 + 5 * 3 + 3]! > 0, "the refusal carries its own retryAfterMs");
      if (name === "leaky-bucket") {
        assert.deepEqual(
          [reply[4 + 4], reply[4 + 5 * 2 + 4]],
          [0, 100_000],
          "a's second request queues behind its first",
        );
      }
    });
  }

  test('sliding-window-log "each": a reused request id stops the call there; the keys before it stay written', async (t) => {
    if (engineFree(t)) return;
    if (!redis) return t.skip(skipReason);
    const log = algorithms["sliding-window-log"] as unknown as AnyAlgorithm;
    const limit = slowLimits["sliding-window-log"];
    const [x, y] = ["x", "y"].map((k) => `${prefix}:each-dup:${k}`);
    touched.add(x!);
    touched.add(y!);
    const argv = ["each", ...["first", "dup", "dup"].flatMap((id) => log.scriptArgs(limit, 1, id))];
    await assert.rejects(
      redis.eval(scriptSource(log), 3, x!, y!, y!, ...argv),
      /requestId already in the log: dup/,
    );
    assert.deepEqual([await redis.zcard(x!), await redis.zcard(y!)], [1, 1]);
    assert.throws(
      () =>
        decideEach(log, 0, [
          { key: y!, state: undefined, limit, cost: 1, requestId: "dup" },
          { key: y!, state: undefined, limit, cost: 1, requestId: "dup" },
        ]),
      /already in the log/,
    );
  });

  test("scripts reject a bad mode or a wrong ARGV count, and the log refuses a reused request id", async (t) => {
    if (engineFree(t)) return;
    if (!redis) return t.skip(skipReason);
    const key = `${prefix}:{u42}:usage`;
    touched.add(key);
    for (const name of algorithmNames) {
      const algorithm = algorithms[name] as unknown as AnyAlgorithm;
      const args = algorithm.scriptArgs(slowLimits[name], 1, "r1");
      await assert.rejects(redis.eval(scriptSource(algorithm), 1, key, "take", ...args), /ERR usage/);
      for (const mode of ["spend", "each"]) {
        await assert.rejects(
          redis.eval(scriptSource(algorithm), 1, key, mode, ...args.slice(1)),
          /ERR usage/,
        );
      }
    }
    const log = algorithms["sliding-window-log"] as unknown as AnyAlgorithm;
    const args = log.scriptArgs(slowLimits["sliding-window-log"], 1, "dup");
    await redis.eval(scriptSource(log), 1, key, "spend", ...args);
    await assert.rejects(
      redis.eval(scriptSource(log), 1, key, "spend", ...args),
      /requestId already in the log: dup/,
    );
    assert.equal(await redis.zcard(key), 1);
  });
});

test("RL-08 every script touches only keys passed in KEYS (static check of each redis.call)", (t) => {
  if (engineFree(t)) return;
  for (const name of algorithmNames) {
    const source = scriptSource(algorithms[name] as unknown as AnyAlgorithm).replace(/--.*$/gm, "");
    const calls = [...source.matchAll(/redis\.call\('(\w+)'(?:, ([^,)]+))?/g)];
    assert.ok(calls.length > 0);
    for (const [text, command, firstArg] of calls) {
      if (command === "TIME") continue;
      assert.equal(firstArg, "key", `${name}: ${text}`);
    }
    // `key` is only ever bound by iterating KEYS.
    assert.deepEqual(
      [...source.matchAll(/for i, key in ([^ ]+) do/g)].map((m) => m[1]),
      ["ipairs(KEYS)", "ipairs(KEYS)"],
    );
    assert.doesNotMatch(source, /KEYS\[/);
  }
});
