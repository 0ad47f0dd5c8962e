/**
 * Issue 15, the compact encoding: the token bucket and the fixed window store one integer
 * (tokensMicro; the count), as rate-limiter-flexible stores its counter, and carry their
 * instant (tsMs; the window's start) in the key's absolute expiry (SET PXAT instant + span,
 * read back by PEXPIRETIME). A key still in an older format (first a hash {tokensMicro, tsMs}
 * / {windowStartMs, count}, then the string "a:b", written by a previous version) is read and
 * rewritten in the current format by the next decision on it, whatever that decision is: an
 * allowed one writes its new state; a refused one rewrites the same state, expiring exactly at
 * its instant + span. Run on the Lua scripts (real Redis) and on their in-process twins.
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
  writeString(key: string, value: string, ttlMs: number): Promise<void>;
  persist(key: string): Promise<void>;
  /** expiresAtMs: PEXPIRETIME (-1: none). */
  read(key: string): Promise<{ type: string; value: string | null; pttl: number; expiresAtMs: number }>;
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
        writeString: async (key, value, ttlMs) => {
          keyspace.set(key, value, { pxMs: ttlMs });
        },
        persist: async (key) => {
          keyspace.persist(key);
        },
        read: async (key) => {
          const pttl = keyspace.pttl(key);
          return {
            type: keyspace.type(key),
            value: keyspace.type(key) === "string" ? keyspace.get(key) : null,
            pttl,
            expiresAtMs: pttl >= 0 ? clock.nowMs() + pttl : -1,
          };
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
        writeString: async (key, value, ttlMs) => {
          await redis.set(key, value, "PX", ttlMs);
        },
        persist: async (key) => {
          await redis.persist(key);
        },
        read: async (key) => {
          const type = await redis.type(key);
          return {
            type,
            value: type === "string" ? await redis.get(key) : null,
            pttl: await redis.pttl(key),
            expiresAtMs: Number(await redis.call("PEXPIRETIME", key)),
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
const tokenBucketLimit: TokenBucketLimit = { algorithm: "token-bucket", capacity: 10, ratePerS: 0.1 };
const hourWindow: FixedWindowLimit = { algorithm: "fixed-window", limit: 10, windowMs: 3_600_000 };
/** Each older format a key may still hold: a hash of named fields, or the string "a:b". */
const cases: {
  limit: TokenBucketLimit | FixedWindowLimit;
  format: "hash" | "a:b";
  fields: [string, string];
}[] = [
  { limit: tokenBucketLimit, format: "hash", fields: ["tokensMicro", "tsMs"] },
  { limit: tokenBucketLimit, format: "a:b", fields: ["tokensMicro", "tsMs"] },
  { limit: hourWindow, format: "hash", fields: ["windowStartMs", "count"] },
  { limit: hourWindow, format: "a:b", fields: ["windowStartMs", "count"] },
];
let sequence = 0;

contractSuite("issue 15: a key in an older format is migrated by its next decision", engines, (it) => {
  for (const { limit, format, fields } of cases) {
    const name = limit.algorithm;
    const algorithm = algorithms[name] as AnyAlgorithm;
    const now = name === "fixed-window" ? "its window's end" : "its last write + 2 × a full refill";
    for (const [mode, spent] of [
      ["spend", 3],
      ["each", 3],
      ["spend", 10],
      ["each", 10],
    ] as const) {
      const outcome = spent === 10 ? "refused" : "allowed";
      it(`${name} (${mode}, ${outcome}): an old ${format} is decided as before and rewritten as an integer expiring at ${now}`, async (engine) => {
        const key = `{fmt-${++sequence}}`;
        const atMs = await engine.nowMs();
        let state: unknown;
        for (let i = 0; i < spent; i++) state = algorithm.decide(state, atMs, limit, 1).state;
        const old = state as Record<string, number>;
        const [a, b] = [String(old[fields[0]]), String(old[fields[1]])];
        const oldTtlMs = algorithm.ttlMs(state, atMs, limit);
        if (format === "hash") await engine.writeHash(key, { [fields[0]]: a, [fields[1]]: b }, oldTtlMs);
        else await engine.writeString(key, `${a}:${b}`, oldTtlMs);

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
        const written = algorithm.toStored(expected.allowed ? expected.state : state, limit);
        if (written.kind !== "string") assert.fail("the new format is a string");
        assert.equal(after.value, written.value);
        assert.match(after.value ?? "", /^\d+$/, "a plain integer");
        // The expiry is part of the state: exact, allowed or refused.
        assert.equal(after.expiresAtMs, written.expiresAtMs, `the key expires at ${now}`);
      });
    }
  }

  it("fixed-window: an old-format key whose window is over is deleted by the decision that meets it, which starts a fresh window", async (engine) => {
    const key = `{fmt-${++sequence}}`;
    const atMs = await engine.nowMs();
    const start = atMs - (atMs % hourWindow.windowMs) - hourWindow.windowMs; // the previous hour
    // Its TTL outlives its window: written by hand, or by a clock that has since moved on.
    await engine.writeHash(key, { windowStartMs: String(start), count: "10" }, 60_000);
    const refund = (await engine.runner.run(
      "fixed-window",
      [key],
      ["refund", "10", "3600000", "1"],
    )) as number[];
    assert.equal(refund[0], 1);
    const after = await engine.read(key);
    assert.deepEqual(
      [after.value, after.expiresAtMs],
      ["0", start + 2 * hourWindow.windowMs],
      "a fresh window",
    );
  });

  for (const limit of [hourWindow, tokenBucketLimit]) {
    it(`${limit.algorithm}: an integer without an expiry cannot say its instant and is refused as corrupt`, async (engine) => {
      const key = `{fmt-${++sequence}}`;
      await engine.writeString(key, "3", 60_000);
      await engine.persist(key);
      const algorithm = algorithms[limit.algorithm] as AnyAlgorithm;
      await assert.rejects(
        engine.runner.run(limit.algorithm, [key], ["spend", ...algorithm.scriptArgs(limit, 1)]),
        /has no expiry/,
      );
    });
  }
});
