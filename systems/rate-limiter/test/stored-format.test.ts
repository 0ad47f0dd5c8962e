/**
 * Issue 15, the compact encoding: the token bucket and the fixed window store their two
 * integers as one string "a:b" (SET PX) instead of a hash with named fields. A key still in
 * the old format (a hash {tokensMicro, tsMs} / {windowStartMs, count}, written by a previous
 * version) is read and rewritten in the new format by the next decision on it, whatever that
 * decision is: an allowed one writes its new state; a refused one rewrites the same state
 * with its TTL kept. Run on the Lua scripts (real Redis) and on their in-process twins.
 */
import assert from "node:assert/strict";
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
import type { Algorithm, FixedWindowLimit, Limit, TokenBucketLimit } from "../src/domain/algorithm.ts";
import { algorithms } from "../src/domain/algorithms.ts";
import { scriptsDir } from "../src/store/limiter-store.ts";
import { scriptTwins } from "../src/store/script-twins.ts";
import { deleteKeys } from "./store-backends.ts";

interface Engine {
  runner: ScriptRunner;
  nowMs(): Promise<number>;
  writeHash(key: string, fields: Record<string, string>, ttlMs: number): Promise<void>;
  read(key: string): Promise<{ type: string; value: string | null; pttl: number }>;
}

const registry = await ScriptRegistry.fromDir(scriptsDir);

const engines = [
  {
    name: "in-process twin",
    embedded: true,
    open: async () => {
      const clock = new ManualClock(1_700_000_000_123);
      const keyspace = new InProcessKeyspace({ clock, maxKeys: 1_000 });
      const engine: Engine = {
        runner: new InProcessScriptRunner({ registry, twins: scriptTwins, keyspace }),
        nowMs: async () => clock.nowMs(),
        writeHash: async (key, fields, ttlMs) => {
          keyspace.hset(key, fields);
          keyspace.pexpire(key, ttlMs);
        },
        read: async (key) => ({
          type: keyspace.type(key),
          value: keyspace.type(key) === "string" ? keyspace.get(key) : null,
          pttl: keyspace.pttl(key),
        }),
      };
      return { subject: engine, close: async () => {} };
    },
  },
  {
    name: "redis",
    open: async (t: { skip(message?: string): void }) => {
      const url = await requireRedis(t);
      if (!url) return undefined;
      const prefix = uniqueName("rl-stored-format");
      const redis = new Redis(url, { maxRetriesPerRequest: 1, keyPrefix: `${prefix}:` });
      const engine: Engine = {
        runner: new RedisScriptRunner(redis, registry),
        nowMs: async () => {
          const [s, us] = await redis.time();
          return Number(s) * 1000 + Math.floor(Number(us) / 1000);
        },
        writeHash: async (key, fields, ttlMs) => {
          await redis.multi().hset(key, fields).pexpire(key, ttlMs).exec();
        },
        read: async (key) => {
          const type = await redis.type(key);
          return {
            type,
            value: type === "string" ? await redis.get(key) : null,
            pttl: await redis.pttl(key),
          };
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

/** Ten units restored over 100 s / a 1 h window: nothing moves between the write and the call. */
const cases: { limit: TokenBucketLimit | FixedWindowLimit; legacyFields: [string, string] }[] = [
  {
    limit: { algorithm: "token-bucket", capacity: 10, ratePerS: 0.1 },
    legacyFields: ["tokensMicro", "tsMs"],
  },
  {
    limit: { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 },
    legacyFields: ["windowStartMs", "count"],
  },
];
let sequence = 0;

contractSuite("issue 15: a key in the old hash format is migrated by its next decision", engines, (it) => {
  for (const { limit, legacyFields } of cases) {
    const name = limit.algorithm;
    const algorithm = algorithms[name] as AnyAlgorithm;
    for (const [mode, spent] of [
      ["spend", 3],
      ["each", 3],
      ["spend", 10],
      ["each", 10],
    ] as const) {
      const outcome = spent === 10 ? "refused" : "allowed";
      it(`${name} (${mode}, ${outcome}): an old-format hash is decided as before and rewritten as "a:b"`, async (engine) => {
        const key = `{fmt-${++sequence}}`;
        const atMs = await engine.nowMs();
        let state: unknown;
        for (let i = 0; i < spent; i++) state = algorithm.decide(state, atMs, limit, 1).state;
        const old = state as Record<string, number>;
        const oldTtlMs = algorithm.ttlMs(state, atMs, limit);
        await engine.writeHash(
          key,
          {
            [legacyFields[0]]: String(old[legacyFields[0]]),
            [legacyFields[1]]: String(old[legacyFields[1]]),
          },
          oldTtlMs,
        );

        const reply = (await engine.runner.run(
          name,
          [key],
          [mode, ...algorithm.scriptArgs(limit, 1)],
        )) as number[];
        const expected = algorithm.decide(state, reply[1]!, limit, 1);
        assert.equal(reply[0], expected.allowed ? 1 : 0, "decided on the old-format state");
        assert.equal(reply[5], expected.remaining, "remaining from the old-format state");
        assert.equal(expected.allowed, outcome === "allowed");

        const after = await engine.read(key);
        assert.equal(after.type, "string", "rewritten in the new format");
        const written = algorithm.toStored(expected.allowed ? expected.state : state);
        assert.deepEqual({ kind: "string", value: after.value }, written);
        if (expected.allowed) {
          // PTTL is read after the call: real Redis's clock has moved on by the round trips.
          const ok = after.pttl <= expected.ttlMs && after.pttl > expected.ttlMs - 5_000;
          assert.ok(ok, `an allowed decision sets its TTL: ${after.pttl} of ${expected.ttlMs}`);
        } else
          assert.ok(after.pttl > 0 && after.pttl <= oldTtlMs, `a refusal keeps the key's TTL: ${after.pttl}`);
      });
    }
  }
});
