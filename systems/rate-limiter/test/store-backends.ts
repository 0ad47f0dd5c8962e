/** The two engines of LimiterStore, for contract suites: in-process (manual clock) and real Redis. */
import { ManualClock } from "@casebook/kit/clock";
import type { Backend } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import { Redis } from "ioredis";
import type { LimiterStore } from "../src/domain/store-port.ts";
import { openInProcessLimiterStore, openRedisLimiterStore } from "../src/store/limiter-store.ts";

export interface StoreSubject {
  store: LimiterStore;
  /** Moves the engine's clock: the manual clock in-process, a real wait on Redis. */
  advance(ms: number): Promise<void>;
}

/** Deletes every key under `prefix` (never FLUSHDB on a shared Redis). */
export async function deleteKeys(url: string, prefix: string): Promise<void> {
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    do {
      const [next, keys] = await admin.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
      if (keys.length > 0) await admin.del(...keys);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    admin.disconnect();
  }
}

function redisBackend(name: string, batchMaxKeys: number): Backend<StoreSubject> {
  return {
    name,
    open: async (t) => {
      const url = await requireRedis(t);
      if (!url) return undefined;
      const keyPrefix = `${uniqueName("rl-store")}:`;
      const store = await openRedisLimiterStore({ url, keyPrefix, batchMaxKeys });
      const advance = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
      return {
        subject: { store, advance },
        close: async () => {
          await store.close();
          await deleteKeys(url, keyPrefix);
        },
      };
    },
  };
}

export const storeBackends: Backend<StoreSubject>[] = [
  {
    name: "in-process",
    embedded: true,
    open: async () => {
      const clock = new ManualClock(1_700_000_000_000);
      const store = await openInProcessLimiterStore({ clock });
      const advance = async (ms: number) => clock.advance(ms);
      return { subject: { store, advance }, close: () => store.close() };
    },
  },
  redisBackend("redis, batched (default)", 8),
  redisBackend("redis, one call per decision", 1),
];
