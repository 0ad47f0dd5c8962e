/**
 * The two engines of the stock store for contract suites: the in-process twin on a
 * ManualClock, and the real Redis under a key prefix of its own (its keys deleted at close),
 * each with several stores on separate connections so races are real.
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { InProcessScriptRunner, RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { ManualClock } from "@casebook/kit/clock";
import type { Backend } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import type { Redis } from "ioredis";
import { stockTwins } from "../src/store/script-twins.ts";
import { StockStore, stockScriptsDir } from "../src/store/stock-store.ts";

export interface StockHarness {
  /** One store per connection; `stores[0]` for single calls. */
  readonly stores: StockStore[];
  /** The same connections, reservations batched across concurrent callers. */
  readonly batched: StockStore[];
  /** A sale id unique to the calling case. */
  sale(name: string): string;
  /** Lets the engine's clock pass `ms` (advances the ManualClock; waits for Redis TIME). */
  passMs(ms: number): Promise<void>;
  /** Drops every key of a sale, as a Redis restarted empty would. */
  forget(saleId: string): Promise<void>;
}

export const STOCK_RACERS = 5;
const BATCH = { maxBatch: 64, maxPending: 1_000 };

export const inProcessStock: Backend<StockHarness> = {
  name: "in-process",
  open: async () => {
    const registry = await ScriptRegistry.fromDir(stockScriptsDir);
    const clock = new ManualClock(1_700_000_000_000);
    const keyspace = new InProcessKeyspace({ clock, maxKeys: 100_000 });
    const runners = Array.from(
      { length: STOCK_RACERS },
      () => new InProcessScriptRunner({ registry, twins: stockTwins, keyspace }),
    );
    const stores = runners.map((r) => new StockStore(r));
    let next = 0;
    const subject: StockHarness = {
      stores,
      batched: runners.map((r) => new StockStore(r, { reserveBatch: BATCH })),
      sale: (name) => `${name}-${next++}`,
      passMs: async (ms) => clock.advance(ms),
      forget: async (saleId) => {
        const tag = `sale:{${saleId}}`;
        keyspace.del(`${tag}:stock`, `${tag}:holds`, `${tag}:hold-qty`);
      },
    };
    return { subject, close: async () => {} };
  },
};

export const redisStock: Backend<StockHarness> = {
  name: "redis",
  open: async (t) => {
    const url = await requireRedis(t);
    if (!url) return undefined;
    const registry = await ScriptRegistry.fromDir(stockScriptsDir);
    const keyPrefix = `${uniqueName("flash_stock")}:`;
    const connections: Redis[] = [];
    for (let i = 0; i < STOCK_RACERS; i++) {
      connections.push(await connectRedis({ url, keyPrefix, commandTimeoutMs: 5_000 }));
    }
    const main = connections[0]!;
    const sales = new Set<string>();
    let next = 0;
    const serverNowMs = async () => {
      const [s, us] = (await main.time()) as [string | number, string | number];
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    const subject: StockHarness = {
      stores: connections.map((c) => new StockStore(new RedisScriptRunner(c, registry))),
      batched: connections.map(
        (c) => new StockStore(new RedisScriptRunner(c, registry), { reserveBatch: BATCH }),
      ),
      sale: (name) => {
        const id = `${name}-${next++}`;
        sales.add(id);
        return id;
      },
      passMs: async (ms) => {
        const target = (await serverNowMs()) + ms;
        const deadline = Date.now() + ms + 10_000;
        while ((await serverNowMs()) <= target) {
          if (Date.now() > deadline) throw new Error("Redis TIME did not advance");
          await new Promise((r) => setTimeout(r, 5));
        }
      },
      forget: async (saleId) => {
        const tag = `sale:{${saleId}}`;
        await main.del(`${tag}:stock`, `${tag}:holds`, `${tag}:hold-qty`);
      },
    };
    const close = async () => {
      for (const id of sales) await subject.forget(id);
      await Promise.all(connections.map((c) => closeRedis(c)));
    };
    return { subject, close };
  },
};
