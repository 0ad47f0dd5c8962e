/**
 * The twin rule, proven on the fixture pair: incr-capped-1.lua on the real Redis
 * and its TypeScript twin on the in-process keyspace pass the SAME cases.
 * A system's own store contract suite has this shape.
 */
import assert from "node:assert/strict";
import { ManualClock } from "@casebook/kit/clock";
import { type Backend, contractSuite } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";
import { closeRedis, connectRedis } from "../../src/redis/connect-redis.ts";
import { InProcessKeyspace } from "../../src/redis/in-process-keyspace.ts";
import { redisErrors } from "../../src/redis/redis-errors.ts";
import { ScriptRegistry } from "../../src/redis/script-registry.ts";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "../../src/redis/script-runner.ts";
import {
  CappedCounterStore,
  cappedCounterScriptsDir,
  cappedCounterTwins,
} from "./fixtures/capped-counter-store.ts";

/** Connections (or in-process runners) racing in the concurrency case. */
const racers = 5;

interface Harness {
  /** One store per racer; `stores[0]` is the one most cases use. */
  stores: CappedCounterStore[];
  runner: ScriptRunner;
  /** A key unique to the calling case (cases share one backend). */
  key(name: string): string;
  /** The store's own clock (Redis TIME on Redis). */
  serverNowMs(): Promise<number>;
  /** Lets the store's clock pass `ms` (waits for Redis TIME; advances the ManualClock). */
  passMs(ms: number): Promise<void>;
  pttl(key: string): Promise<number>;
  setString(key: string, value: string): Promise<void>;
}

const inProcess: Backend<Harness> = {
  name: "in-process",
  embedded: true,
  open: async () => {
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
    const clock = new ManualClock(1_700_000_000_000);
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 10_000 });
    const runners = Array.from(
      { length: racers },
      () => new InProcessScriptRunner({ registry, twins: cappedCounterTwins, keyspace }),
    );
    let next = 0;
    const subject: Harness = {
      stores: runners.map((runner) => new CappedCounterStore(runner)),
      runner: runners[0]!,
      key: (name) => `${name}:${next++}`,
      serverNowMs: async () => keyspace.nowMs(),
      passMs: async (ms) => clock.advance(ms),
      pttl: async (key) => keyspace.pttl(key),
      setString: async (key, value) => void keyspace.set(key, value),
    };
    return { subject, close: async () => {} };
  },
};

const redis: Backend<Harness> = {
  name: "redis",
  open: async (t) => {
    const url = await requireRedis(t);
    if (!url) return undefined;
    const registry = await ScriptRegistry.fromDir(cappedCounterScriptsDir);
    const keyPrefix = `${uniqueName("infra_redis_contract")}:`;
    // Generous command timeout: the shared CI Redis may be busy; these cases test semantics.
    const connections: Redis[] = [];
    for (let i = 0; i < racers; i++) {
      connections.push(
        await connectRedis({ url, keyPrefix, commandTimeoutMs: 5_000, connectionName: keyPrefix }),
      );
    }
    const main = connections[0]!;
    const runners = connections.map((connection) => new RedisScriptRunner(connection, registry));
    const used = new Set<string>();
    let next = 0;
    const serverNowMs = async () => {
      const [seconds, micros] = (await main.time()) as [string, string] | [number, number];
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };
    const subject: Harness = {
      stores: runners.map((runner) => new CappedCounterStore(runner)),
      runner: runners[0]!,
      key: (name) => {
        const key = `${name}:${next++}`;
        used.add(key);
        return key;
      },
      serverNowMs,
      passMs: (ms) => waitForServerTime(serverNowMs, ms),
      pttl: (key) => main.pttl(key),
      setString: async (key, value) => void (await main.set(key, value)),
    };
    const close = async () => {
      if (used.size > 0) await main.del(...used); // keyPrefix applies: only our keys go
      await Promise.all(connections.map((connection) => closeRedis(connection)));
    };
    return { subject, close };
  },
};

/** Waits (bounded poll of an external process) until Redis's TIME has moved `ms` forward. */
async function waitForServerTime(serverNowMs: () => Promise<number>, ms: number): Promise<void> {
  const targetMs = (await serverNowMs()) + ms;
  const deadline = Date.now() + ms + 10_000;
  while ((await serverNowMs()) < targetMs) {
    if (Date.now() > deadline) throw new Error(`Redis TIME did not advance ${ms} ms before the deadline`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Long enough that real time passing during a case never opens a new window. */
const longWindowMs = 600_000;

contractSuite<Harness>("incr-capped script and twin", [inProcess, redis], (it) => {
  it("the first hit opens a window: allowed, count 1, resetting windowMs after the server's now", async (h) => {
    const before = await h.serverNowMs();
    const result = await h.stores[0]!.hit(h.key("first"), 3, longWindowMs);
    const after = await h.serverNowMs();
    assert.equal(result.allowed, true);
    assert.equal(result.count, 1);
    assert.ok(result.resetAtMs >= before + longWindowMs && result.resetAtMs <= after + longWindowMs);
  });

  it("hits beyond the cap are refused and not counted", async (h) => {
    const key = h.key("cap");
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await h.stores[0]!.hit(key, 3, longWindowMs));
    assert.deepEqual(
      results.map((r) => [r.allowed, r.count]),
      [
        [true, 1],
        [true, 2],
        [true, 3],
        [false, 3],
        [false, 3],
      ],
    );
    assert.equal(new Set(results.map((r) => r.resetAtMs)).size, 1, "one window, one reset time");
  });

  it("the counter carries a TTL ending with its window", async (h) => {
    const key = h.key("ttl");
    await h.stores[0]!.hit(key, 3, longWindowMs);
    const pttl = await h.pttl(key);
    assert.ok(pttl > 0 && pttl <= longWindowMs, `pttl ${pttl}`);
  });

  it("once the server clock passes the window's end, the key is gone and a new window opens", async (h) => {
    const key = h.key("reset");
    const windowMs = 150;
    const first = await h.stores[0]!.hit(key, 1, windowMs);
    assert.equal((await h.stores[0]!.hit(key, 1, windowMs)).allowed, false);
    await h.passMs(windowMs + 1); // expired means now > expiresAt, on both engines
    assert.equal(await h.pttl(key), -2);
    const next = await h.stores[0]!.hit(key, 1, windowMs);
    assert.equal(next.allowed, true);
    assert.equal(next.count, 1);
    assert.ok(next.resetAtMs > first.resetAtMs);
  });

  it("an invalid argument is the script's error reply: REDIS_SCRIPT_FAILED, replyCode ARG_INVALID", async (h) => {
    for (const [cap, windowMs] of [
      [0, 1_000],
      [2.5, 1_000],
      [3, -1],
    ] as const) {
      await assert.rejects(h.stores[0]!.hit(h.key("invalid"), cap, windowMs), (error) => {
        assert.ok(redisErrors.is(error, "REDIS_SCRIPT_FAILED"));
        assert.equal(error.fields.replyCode, "ARG_INVALID");
        return true;
      });
    }
    await assert.rejects(h.runner.run("incr-capped", [h.key("blank")], ["", 1_000]), /ARG_INVALID/);
  });

  it("a key of the wrong type fails with WRONGTYPE on both engines", async (h) => {
    const key = h.key("wrongtype");
    await h.setString(key, "not a hash");
    await assert.rejects(h.stores[0]!.hit(key, 3, longWindowMs), (error) => {
      assert.ok(redisErrors.is(error, "REDIS_SCRIPT_FAILED"));
      assert.equal(error.fields.replyCode, "WRONGTYPE");
      return true;
    });
  });

  it("a call with the wrong number of keys or args is refused before reaching the engine", async (h) => {
    await assert.rejects(h.runner.run("incr-capped", [h.key("a"), h.key("b")], [3, 1_000]), (error) =>
      redisErrors.is(error, "REDIS_SCRIPT_ARITY"),
    );
    await assert.rejects(h.runner.run("incr-capped", [h.key("c")], [3]), (error) =>
      redisErrors.is(error, "REDIS_SCRIPT_ARITY"),
    );
    await assert.rejects(h.runner.run("incr-capped", [h.key("d")], [Number.NaN, 1_000]), (error) =>
      redisErrors.is(error, "REDIS_SCRIPT_ARITY"),
    );
  });

  it("an unknown script name is REDIS_SCRIPT_UNKNOWN", async (h) => {
    await assert.rejects(h.runner.run("no-such-script", [], []), (error) =>
      redisErrors.is(error, "REDIS_SCRIPT_UNKNOWN"),
    );
  });

  it("a batch runs in call order, each call atomic", async (h) => {
    const key = h.key("batch");
    const other = h.key("batch-other");
    const results = await h.stores[0]!.hitMany([key, key, other, key, key], 3, longWindowMs);
    assert.deepEqual(
      results.map((r) => [r.allowed, r.count]),
      [
        [true, 1],
        [true, 2],
        [true, 1],
        [true, 3],
        [false, 3],
      ],
    );
  });

  it("50 parallel hits from several connections never exceed a cap of 10", async (h) => {
    const key = h.key("race");
    const cap = 10;
    const hits = Array.from({ length: 50 }, (_, i) =>
      h.stores[i % h.stores.length]!.hit(key, cap, longWindowMs),
    );
    const results = await Promise.all(hits);
    const allowed = results.filter((r) => r.allowed);
    assert.equal(allowed.length, cap);
    assert.deepEqual(
      allowed.map((r) => r.count).sort((a, b) => a - b),
      Array.from({ length: cap }, (_, i) => i + 1),
      "each admitted hit saw a distinct count",
    );
    assert.ok(results.every((r) => r.count <= cap));
  });
});
