/**
 * CH-01's guarantee under faults, checked by the history checker (src/domain/history-checker.ts:
 * lost acknowledged message, duplicate display, order broken, skipped offset) over what
 * every client displayed. The deployed shape on PostgreSQL and Redis: a send service (in this
 * process), 3 gateway processes behind the L4 front, 6 clients (the client library) in 3 group
 * conversations of 4 members (kill-world.ts). A seeded schedule of 60 sends, with SIGKILLs of
 * gateways mid-conversation (each restarted 400 ms later) and a restart of the send service.
 *
 * Scale, stated: 3 conversations, 6 clients, 60 messages, 2 gateway kills, 1 send-service
 * restart, per seed; one seed runs in CI (CHAT_KILL_SEEDS=1,2,3 runs more).
 */
import { existsSync } from "node:fs";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { int, seededRandom } from "@casebook/kit/random";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { STREAM_MODULE_PATH } from "../src/edge/l4-front.ts";
import { startKillWorld } from "./kill-world.ts";

const SEEDS = (process.env.CHAT_KILL_SEEDS ?? "1").split(",").map(Number);
const SENDS = 60;

for (const seed of SEEDS) {
  test(`CH-01 CH-03 CH-10 seed ${seed}: 60 sends across SIGKILLed gateways and a send-service restart — no lost, duplicate, reordered or skipped message`, async (t) => {
    if (!existsSync(STREAM_MODULE_PATH)) return t.skip("nginx's stream module is not installed");
    const dbUrl = await requirePostgres(t);
    const redisUrl = dbUrl && (await requireRedis(t));
    if (!dbUrl || !redisUrl) return;
    const rng = seededRandom(seed);
    const world = await startKillWorld(t, { dbUrl, redisUrl, seed, name: "chat_kill" });

    const faults: Promise<void>[] = [];
    const killAt = new Set([15 + int(rng, 5), 35 + int(rng, 5)]);
    const restartApiAt = 25 + int(rng, 5);
    for (let n = 0; n < SENDS; n++) {
      if (killAt.has(n)) faults.push(world.replaceGateway(int(rng, 3), (gw) => gw.kill(), 400));
      if (n === restartApiAt) await world.restartApi();
      void world.send(n, rng);
      await sleep(20 + int(rng, 30));
    }
    await Promise.all(faults);
    await world.settle(SENDS);
  });
}
