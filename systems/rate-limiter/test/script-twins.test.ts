/**
 * The twins' mode "each" against decideEach, on the in-process engine the embedded store
 * runs (InProcessScriptRunner, the scripts' headers, a manual clock): the reply, and each
 * key's final state and exact TTL. lua-conformance.test.ts proves the same of the Lua
 * scripts on real Redis, so Lua ≡ domain ≡ twin for "each" until the store exposes it to
 * the contract suite.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { InProcessScriptRunner } from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import fc from "fast-check";
import {
  type Algorithm,
  algorithmNames,
  decideEach,
  type Limit,
  limitBounds,
  maxCost,
  type StoredState,
} from "../src/domain/algorithm.ts";
import { algorithms } from "../src/domain/algorithms.ts";
import { scriptsDir } from "../src/store/limiter-store.ts";
import { scriptTwins, storedKind } from "../src/store/script-twins.ts";
import { limitArbitraries } from "./limit-arbitraries.ts";

const SEED = Number(process.env.FC_SEED ?? 20_261_022);
const RUNS_PER_ALGORITHM = 40;
const START_MS = 1_700_000_000_000;

type AnyAlgorithm = Algorithm<Limit, unknown>;

const stepArbitrary = fc.record({
  requests: fc.array(fc.record({ keyIndex: fc.nat({ max: 2 }), costPick: fc.nat({ max: 100 }) }), {
    minLength: 1,
    maxLength: 8,
  }),
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12 })),
});

async function openEngine() {
  const clock = new ManualClock(START_MS);
  const keyspace = new InProcessKeyspace({ clock, maxKeys: 10_000 });
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const runner = new InProcessScriptRunner({ registry, twins: scriptTwins, keyspace });
  return { clock, keyspace, runner };
}

function readState(keyspace: InProcessKeyspace, algorithm: AnyAlgorithm, key: string, limit: Limit): unknown {
  const kind = storedKind(algorithm.name);
  const pttl = keyspace.pttl(key);
  const stored: StoredState =
    kind === "string"
      ? {
          kind,
          value: keyspace.get(key) ?? undefined,
          expiresAtMs: pttl >= 0 ? keyspace.nowMs() + pttl : undefined,
        }
      : kind === "zset"
        ? {
            kind: "zset",
            entries: keyspace
              .zrange(key, 0, -1)
              .map((member) => ({ member, score: String(keyspace.zscore(key, member)) })),
          }
        : { kind: "hash", fields: keyspace.hgetall(key) };
  return algorithm.fromStored(stored, limit);
}

/** The domain state as the keyspace holds it: an empty log is no key. */
function normalized(algorithm: AnyAlgorithm, state: unknown, limit: Limit): unknown {
  return state === undefined ? undefined : algorithm.fromStored(algorithm.toStored(state, limit), limit);
}

interface EachItem {
  key: string;
  limit: Limit;
  cost: number;
  requestId: string;
}

function argvOf(algorithm: AnyAlgorithm, items: readonly EachItem[]): string[] {
  return ["each", ...items.flatMap((item) => algorithm.scriptArgs(item.limit, item.cost, item.requestId))];
}

for (const name of algorithmNames) {
  test(`${name} twin "each" (1–8 requests over 3 keys, repeats included) matches decideEach: reply, state, exact TTL`, async () => {
    const algorithm = algorithms[name] as unknown as AnyAlgorithm;
    let run = 0;
    let repeatsAfterWrite = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(limitArbitraries[name], { minLength: 3, maxLength: 3 }),
        fc.array(stepArbitrary, { minLength: 1, maxLength: 20, size: "large" }),
        async (limits, steps) => {
          run++;
          const { clock, keyspace, runner } = await openEngine();
          const keys = limits.map((_, i) => `{u42}:${name}:${run}:k${i}`);
          for (const [index, step] of steps.entries()) {
            clock.advance(step.advanceMs);
            const items = step.requests.map(({ keyIndex, costPick }, j) => ({
              key: keys[keyIndex]!,
              limit: limits[keyIndex]!,
              cost: 1 + (costPick % maxCost(limits[keyIndex]!)),
              requestId: `req-${index}-${j}`,
            }));
            const nowMs = clock.nowMs();
            const before = new Map(
              keys.map((key, k) => [key, readState(keyspace, algorithm, key, limits[k]!)]),
            );
            const reply = (await runner.run(
              name,
              items.map((item) => item.key),
              argvOf(algorithm, items),
            )) as number[];
            const decisions = decideEach(
              algorithm,
              nowMs,
              items.map((item) => ({ ...item, state: before.get(item.key) })),
            );
            const perKey = decisions.flatMap((d) => [
              d.allowed ? 1 : 0,
              d.remaining,
              d.resetMs,
              d.retryAfterMs,
              d.delayMs,
            ]);
            const allowedCount = decisions.filter((d) => d.allowed).length;
            assert.deepEqual(reply, [allowedCount, nowMs, 0, 0, ...perKey]);
            for (const [k, key] of keys.entries()) {
              const last = decisions.findLastIndex((d, j) => d.allowed && items[j]!.key === key);
              const want = normalized(
                algorithm,
                last === -1 ? before.get(key) : decisions[last]!.state,
                limits[k]!,
              );
              assert.deepEqual(readState(keyspace, algorithm, key, limits[k]!), want, key);
              if (last !== -1 && want !== undefined) {
                assert.equal(keyspace.pttl(key), decisions[last]!.ttlMs, `PTTL of ${key}`);
              }
            }
            repeatsAfterWrite += items.filter((item, j) =>
              decisions.slice(0, j).some((d, k) => d.allowed && items[k]!.key === item.key),
            ).length;
          }
        },
      ),
      { seed: SEED, numRuns: RUNS_PER_ALGORITHM },
    );
    assert.ok(repeatsAfterWrite > 30, `repeats after a write: ${repeatsAfterWrite}`);
  });
}

test('twin "each": a malformed call writes nothing; a reused request id stops the call with the keys before it written', async () => {
  const { keyspace, runner } = await openEngine();
  const tb = algorithms["token-bucket"] as unknown as AnyAlgorithm;
  const bucket = { algorithm: "token-bucket", capacity: 2, ratePerS: 1 } as const;
  const good = { key: "{u1}:a", limit: bucket, cost: 1, requestId: "r1" };
  const tooCostly = { key: "{u1}:b", limit: bucket, cost: 3, requestId: "r2" };
  await assert.rejects(
    runner.run("token-bucket", [good.key, tooCostly.key], argvOf(tb, [good, tooCostly])),
    /cost must be an integer/,
  );
  assert.equal(keyspace.exists(good.key), false, "validated before anything is decided");
  const many = Array.from({ length: limitBounds.maxCallsPerEach + 1 }, () => good);
  await assert.rejects(
    runner.run(
      "token-bucket",
      many.map((item) => item.key),
      argvOf(tb, many),
    ),
    /calls.length/,
  );

  const log = algorithms["sliding-window-log"] as unknown as AnyAlgorithm;
  const window = { algorithm: "sliding-window-log", limit: 2, windowMs: 60_000 } as const;
  const items = ["first", "dup", "dup"].map((requestId, j) => ({
    key: j === 0 ? "{u1}:x" : "{u1}:y",
    limit: window,
    cost: 1,
    requestId,
  }));
  await assert.rejects(
    runner.run(
      "sliding-window-log",
      items.map((item) => item.key),
      argvOf(log, items),
    ),
    /already in the log/,
  );
  assert.deepEqual([keyspace.zcard("{u1}:x"), keyspace.zcard("{u1}:y")], [1, 1], "as the script leaves them");
});
