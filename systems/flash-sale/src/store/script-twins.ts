/**
 * The in-process twins of `scripts/*.lua`: the same steps in the same order against infra's
 * InProcessKeyspace (the embedded engine). Read each beside its script; the store contract
 * suite (`test/stock-store.contract.test.ts`) runs the same cases on both engines, so a
 * difference is a failing test. A twin is synchronous: nothing interleaves it, as nothing
 * interleaves a Lua script.
 */
import type { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import { type LuaReply, luaToNumber } from "@casebook/infra/redis/lua-reply";
import type { ScriptTwin } from "@casebook/infra/redis/script-runner";

function serverTimeMs(keyspace: InProcessKeyspace): number {
  const [seconds, micros] = keyspace.time();
  return seconds * 1000 + Math.floor(micros / 1000);
}

function isInteger(n: number | null, min: number, max = Number.POSITIVE_INFINITY): n is number {
  return n !== null && n >= min && n <= max && n % 1 === 0;
}

const reserveStock: ScriptTwin = (ks, [stock, holds, quantities], argv) => {
  const n = argv.length / 3;
  if (!isInteger(n, 1, 1000))
    return { err: "ARG_INVALID holds come as 1..1000 holdId, quantity, holdTtlMs triples" };
  for (let i = 0; i < argv.length; i += 3) {
    if (!isInteger(luaToNumber(argv[i + 1]!), 1))
      return { err: "ARG_INVALID quantity must be an integer >= 1" };
    if (!isInteger(luaToNumber(argv[i + 2]!), 1))
      return { err: "ARG_INVALID holdTtlMs must be an integer >= 1" };
  }
  if (!ks.exists(stock!)) return { err: "STOCK_MISSING the sale's stock is not in Redis: recompute it" };
  const epoch = luaToNumber(ks.hget(stock!, "epoch"))!;
  const now = serverTimeMs(ks);
  const out: number[] = [];
  for (let i = 0; i < argv.length; i += 3) {
    const holdId = argv[i]!;
    const qty = luaToNumber(argv[i + 1]!)!;
    const ttl = luaToNumber(argv[i + 2]!)!;
    if (ks.zscore(holds!, holdId) !== null) {
      out.push(-1, 0, epoch, 0);
      continue;
    }
    const after = ks.hincrBy(stock!, "available", -qty);
    if (after < 0) {
      ks.hincrBy(stock!, "available", qty);
      out.push(0, after, epoch, 0);
      continue;
    }
    ks.zadd(holds!, now + ttl, holdId);
    ks.hset(quantities!, { [holdId]: qty });
    out.push(1, after, epoch, now + ttl);
  }
  return out;
};

const returnHold: ScriptTwin = (ks, [stock, holds, quantities], [holdId]) => {
  if (ks.zrem(holds!, holdId!) === 0) {
    const available = ks.hget(stock!, "available");
    return [0, available === null ? -1 : luaToNumber(available)];
  }
  const qty = luaToNumber(ks.hget(quantities!, holdId!)) ?? 0;
  ks.hdel(quantities!, holdId!);
  if (!ks.exists(stock!)) return [0, -1];
  return [1, ks.hincrBy(stock!, "available", qty)];
};

const settleHold: ScriptTwin = (ks, [holds, quantities], [holdId]) => {
  const removed = ks.zrem(holds!, holdId!);
  ks.hdel(quantities!, holdId!);
  return removed;
};

const dueHolds: ScriptTwin = (ks, [holds], [maxText]) => {
  const max = luaToNumber(maxText);
  if (!isInteger(max, 1, 10_000)) return { err: "ARG_INVALID maxBatch must be an integer in 1..10000" };
  const now = serverTimeMs(ks);
  return [now, ...ks.zrangeByScore(holds!, "-inf", now, { offset: 0, count: max })];
};

const deferHold: ScriptTwin = (ks, [holds], [holdId, delayText]) => {
  const delay = luaToNumber(delayText);
  if (!isInteger(delay, 1)) return { err: "ARG_INVALID delayMs must be an integer >= 1" };
  if (ks.zscore(holds!, holdId!) === null) return 0;
  ks.zadd(holds!, serverTimeMs(ks) + delay, holdId!);
  return 1;
};

const restoreStock: ScriptTwin = (ks, [stock, holds, quantities], argv) => {
  const [epoch, available, recheck] = argv.slice(0, 3).map(luaToNumber) as (number | null)[];
  if (!isInteger(epoch!, 1)) return { err: "ARG_INVALID epoch must be an integer >= 1" };
  if (!isInteger(available!, 0)) return { err: "ARG_INVALID available must be an integer >= 0" };
  if (!isInteger(recheck!, 1)) return { err: "ARG_INVALID recheckMs must be an integer >= 1" };
  if (argv.length % 2 !== 1) return { err: "ARG_INVALID holds come as holdId, quantity pairs" };
  const stored = luaToNumber(ks.hget(stock!, "epoch"));
  if (stored !== null && stored > epoch!) return 0;
  ks.del(holds!, quantities!);
  ks.hset(stock!, { available: available!, epoch: epoch! });
  const at = serverTimeMs(ks) + recheck!;
  for (let i = 3; i < argv.length; i += 2) {
    ks.zadd(holds!, at, argv[i]!);
    ks.hset(quantities!, { [argv[i]!]: argv[i + 1]! });
  }
  return 1;
};

const stockView: ScriptTwin = (ks, [stock, holds]): LuaReply => {
  const available = ks.hget(stock!, "available");
  if (available === null) return [-1, 0, ks.zcard(holds!)];
  return [luaToNumber(available), luaToNumber(ks.hget(stock!, "epoch")), ks.zcard(holds!)];
};

const naiveRead: ScriptTwin = (ks, [stock]) => {
  const available = ks.hget(stock!, "available");
  return available === null ? -1 : luaToNumber(available);
};

const naiveWrite: ScriptTwin = (ks, [stock], [available]) => {
  ks.hset(stock!, { available: available! });
  return 1;
};

/** One twin per script of `scripts/`, under the script's name (InProcessScriptRunner checks both ways). */
export const stockTwins: Readonly<Record<string, ScriptTwin>> = {
  "reserve-stock": reserveStock,
  "return-hold": returnHold,
  "settle-hold": settleHold,
  "due-holds": dueHolds,
  "defer-hold": deferHold,
  "restore-stock": restoreStock,
  "stock-view": stockView,
  "naive-read": naiveRead,
  "naive-write": naiveWrite,
};
