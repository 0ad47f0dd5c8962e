/**
 * The two engines of the timeline store for contract suites: the in-process twin on a
 * ManualClock, and the real Redis under a key prefix of its own (its keys deleted at close).
 * `runner` is wrapped to count round trips, so FD-16's batching is observable.
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
} from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import type { Backend } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";
import { timelineTwins } from "../src/store/script-twins.ts";
import { TimelineStore, type TimelineStoreOptions, timelineScriptsDir } from "../src/store/timeline-store.ts";

export const TEST_CAP = 5;

export interface TimelineHarness {
  /** Two stores on separate connections, for races. */
  readonly stores: [TimelineStore, TimelineStore];
  /** The stores' runners (the first counts round trips), for the caches beside the lists. */
  readonly runners: [ScriptRunner, ScriptRunner];
  /** Round trips (run or runBatch calls) made through `stores[0]`. */
  roundTrips(): number;
  /** Script calls made through `stores[0]` (a batch counts each of its calls). */
  scriptCalls(): number;
  /** Drops every key of the user, as a Redis restarted empty would. */
  forget(userId: bigint): Promise<void>;
  /** Drops one key, as an eviction would. */
  forgetKey(key: string): Promise<void>;
  /** Waits `ms` of the engine's clock. */
  passMs(ms: number): Promise<void>;
  readonly redis: Redis | undefined;
}

function counting(runner: ScriptRunner, count: (calls: number) => void): ScriptRunner {
  return {
    run: (name, keys, args) => {
      count(1);
      return runner.run(name, keys, args);
    },
    runBatch: (calls) => {
      count(calls.length);
      return runner.runBatch(calls);
    },
  };
}

/**
 * The stores' options. The rebuild lock lives 30 s: the steps that need it held (a rebuild's
 * begin, fill and end; FD-19's "another owner is refused") are a few round trips, and on a
 * loaded host they outlived a 400 ms lock. FD-19's expiry takes a short lock of its own.
 */
export const TIMELINE_OPTIONS: TimelineStoreOptions = { cap: TEST_CAP, ttlMs: 60_000, lockMs: 30_000 };

export const inProcessTimelines: Backend<TimelineHarness> = {
  name: "in-process",
  embedded: true,
  open: async () => {
    const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
    const clock = new ManualClock(1_700_000_000_000);
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 100_000 });
    const runner = new InProcessScriptRunner({ registry, twins: timelineTwins, keyspace });
    let trips = 0;
    let calls = 0;
    const counted = counting(runner, (n) => {
      trips++;
      calls += n;
    });
    const subject: TimelineHarness = {
      stores: [new TimelineStore(counted, TIMELINE_OPTIONS), new TimelineStore(runner, TIMELINE_OPTIONS)],
      runners: [counted, runner],
      roundTrips: () => trips,
      scriptCalls: () => calls,
      forget: async (userId) =>
        void keyspace.del(`tl:{${userId}}`, `lock:rebuild:{${userId}}`, `tll:{${userId}}`),
      forgetKey: async (key) => void keyspace.del(key),
      passMs: async (ms) => clock.advance(ms),
      redis: undefined,
    };
    return { subject, close: async () => {} };
  },
};

export const redisTimelines: Backend<TimelineHarness> = {
  name: "redis",
  open: async (t) => {
    const url = await requireRedis(t);
    if (!url) return undefined;
    const registry = await ScriptRegistry.fromDir(timelineScriptsDir);
    const keyPrefix = `feed:${uniqueName("tl")}:`;
    const a = await connectRedis({ url, keyPrefix, commandTimeoutMs: 5_000 });
    const b = await connectRedis({ url, keyPrefix, commandTimeoutMs: 5_000 });
    let trips = 0;
    let calls = 0;
    const counted = counting(new RedisScriptRunner(a, registry), (n) => {
      trips++;
      calls += n;
    });
    const plain = new RedisScriptRunner(b, registry);
    const subject: TimelineHarness = {
      stores: [new TimelineStore(counted, TIMELINE_OPTIONS), new TimelineStore(plain, TIMELINE_OPTIONS)],
      runners: [counted, plain],
      roundTrips: () => trips,
      scriptCalls: () => calls,
      forget: async (userId) =>
        void (await a.del(`tl:{${userId}}`, `lock:rebuild:{${userId}}`, `tll:{${userId}}`)),
      forgetKey: async (key) => void (await a.del(key)),
      passMs: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
      redis: a,
    };
    return {
      subject,
      close: async () => {
        const keys = await a.keys(`${keyPrefix}*`);
        if (keys.length > 0) await a.unlink(...keys.map((k) => k.slice(keyPrefix.length)));
        await closeRedis(a);
        await closeRedis(b);
      },
    };
  },
};
