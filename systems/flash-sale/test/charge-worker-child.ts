/**
 * A charge worker PROCESS for charge-faults.test.ts: the production ChargeWorker on
 * PostgreSQL and Redis, charging through PaymentsCharger — which SIGKILLs its own process at
 * one of the saga's worst places to die: `after-approval`, the moment the processor approves a
 * charge, before anything is written (payments has the money, flash-sale has no record of
 * it); `after-refund`, the moment payments answers a refund, before the worker writes that it
 * is done. Prints "ready", then drains until it dies.
 *
 * argv: <database url> <schema> <redis url> <key prefix> <payments url> <lease ms> <after-approval|after-refund>
 */
import { closeRedis, connectRedis } from "@casebook/infra/redis/connect-redis";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import { RedisScriptRunner } from "@casebook/infra/redis/script-runner";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { PaymentsCharger } from "../src/clients/payments-charger.ts";
import type { Charger } from "../src/domain/charger.ts";
import { StockStore, stockScriptsDir } from "../src/store/stock-store.ts";
import { ChargeWorker } from "../src/workers/charge-worker.ts";

const [url, schema, redisUrl, keyPrefix, paymentsUrl, leaseArg, dieAt] = process.argv.slice(2);
if (!url || !schema || !redisUrl || !keyPrefix || !paymentsUrl || !leaseArg) {
  throw new Error(
    "usage: <db url> <schema> <redis url> <prefix> <payments url> <lease ms> <after-approval|after-refund>",
  );
}
if (dieAt !== "after-approval" && dieAt !== "after-refund") throw new Error(`dieAt: ${dieAt}`);
const db = await openDatabase({ system: "flash-sale", url, schema, pool: { maxConnections: 2 } });
const redis = await connectRedis({ url: redisUrl, keyPrefix, commandTimeoutMs: 10_000 });
const stock = new StockStore(new RedisScriptRunner(redis, await ScriptRegistry.fromDir(stockScriptsDir)));
const payments = new PaymentsCharger({
  url: paymentsUrl,
  apiKey: "test-key",
  cardToken: "tok_visa",
  timeoutMs: 5_000,
});
const dying: Charger = {
  charge: async (input) => {
    const r = await payments.charge(input);
    if (r.kind === "approved" && dieAt === "after-approval") process.kill(process.pid, "SIGKILL");
    return r;
  },
  refund: async (input) => {
    const r = await payments.refund(input);
    if (dieAt === "after-refund") process.kill(process.pid, "SIGKILL");
    return r;
  },
};
const worker = new ChargeWorker({
  db,
  stock,
  charger: dying,
  clock: systemClock,
  ratePerS: 100,
  maxBatch: 10,
  leaseMs: Number(leaseArg),
  idleMs: 20,
  retryBaseMs: 50,
  retryCapMs: 200,
});
process.stdout.write("ready\n");
for (let round = 0; round < 1_000; round++) {
  if ((await worker.runOnce()).claimed === 0) await new Promise((r) => setTimeout(r, 20));
}
await closeRedis(redis);
await db.close();
