/**
 * One racing PROCESS of sale-race.test.ts (FS-01/05): its own PostgreSQL pool and Redis
 * connection, the production checkout over them. Prints "ready", waits for "go" on stdin (so
 * every process starts in the same instant), makes `count` attempts for one ticket each with
 * `concurrency` in flight, pays 9 holds in 10 at once (the 10th is left to expire), and prints
 * one JSON line of counts. Paying is either the order written at once (`direct`: the race
 * alone) or the production pay (`queue`: held → charging with its charge queued, in one
 * statement; the charge worker takes it to payments).
 *
 * argv: <database url> <schema> <redis url> <key prefix> <sale id> <first buyer> <count> <concurrency> <hold ttl ms> <direct|queue>
 */
import { createInterface } from "node:readline";
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { Checkout } from "../src/domain/checkout.ts";
import { HoldLedger } from "../src/store/hold-ledger.ts";
import { completeOrder, startCharge, transitionHold } from "../src/store/sale-repository.ts";
import { StockStore, stockScriptsDir } from "../src/store/stock-store.ts";

const [url, schema, redisUrl, keyPrefix, saleId, firstArg, countArg, concurrencyArg, ttlArg, payArg] =
  process.argv.slice(2);
if (
  !url ||
  !schema ||
  !redisUrl ||
  !keyPrefix ||
  !saleId ||
  !firstArg ||
  !countArg ||
  !concurrencyArg ||
  !ttlArg ||
  (payArg !== "direct" && payArg !== "queue")
) {
  throw new Error(
    "usage: <db url> <schema> <redis url> <prefix> <sale> <first> <count> <concurrency> <ttl ms> <direct|queue>",
  );
}
const first = Number(firstArg);
const count = Number(countArg);
const concurrency = Number(concurrencyArg);
const holdTtlMs = Number(ttlArg);

const db = await openDatabase({
  system: "flash-sale",
  url,
  schema,
  pool: { maxConnections: 4, connectTimeoutMs: 60_000 },
});
const redis = await connectRedis({ url: redisUrl, keyPrefix, commandTimeoutMs: 20_000 });
const stock = new StockStore(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(stockScriptsDir)));
const ledger = new HoldLedger({ db, stock, clock: systemClock, recheckMs: 30_000 });
let seq = 0;
const checkout = new Checkout({
  stock,
  ledger,
  clock: systemClock,
  newHoldId: () => `h_${process.pid}_${seq++}`,
});

const lines = createInterface({ input: process.stdin });
const go = new Promise<void>((resolve) => lines.on("line", (line) => line === "go" && resolve()));
process.stdout.write("ready\n");
await go;

const tally = { attempts: 0, held: 0, soldOut: 0, other: 0, paid: 0, queued: 0, leftToExpire: 0, lastOne: 0 };
let next = 0;
async function worker(): Promise<void> {
  while (next < count) {
    const i = first + next++;
    tally.attempts += 1;
    const r = await checkout.reserve({ saleId: saleId!, buyer: `b${i}`, quantity: 1, holdTtlMs });
    if (r.kind === "sold-out") tally.soldOut += 1;
    else if (r.kind !== "held") tally.other += 1;
    else {
      tally.held += 1;
      if (r.availableAfter === 0) tally.lastOne += 1;
      if (i % 10 === 0) {
        tally.leftToExpire += 1;
        continue;
      }
      const now = systemClock.nowMs();
      if (payArg === "queue") {
        if ((await startCharge(db, { holdId: r.holdId, nowMs: now })).won) tally.queued += 1;
        continue;
      }
      if (!(await transitionHold(db, r.holdId, "pay", now)).won) continue;
      const done = await completeOrder(db, {
        holdId: r.holdId,
        paymentId: `pay_${r.holdId}`,
        amountMinor: 5_000n,
        nowMs: now,
      });
      if (done.kind === "paid") {
        tally.paid += 1;
        await stock.settleHold(saleId!, r.holdId);
      }
    }
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
process.stdout.write(`${JSON.stringify(tally)}\n`);
await closeRedis(redis);
await db.close();
