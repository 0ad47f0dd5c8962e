/**
 * CH-01's guarantee under the faults of operations, checked like gateway-kills.test.ts by the
 * history checker over what every client displayed, in the same world (kill-world.ts: a send
 * service in this process, 3 gateway processes behind the nginx L4 front, 6 clients of the
 * client library in 3 group conversations of 4 members):
 *
 * - a rolling deploy (CH-27): during the seeded sends every gateway is SIGTERMed in turn —
 *   gateway 0, wait until it has drained (its sockets closed with 4000), exited, been started
 *   again on its port and is ready, then gateway 1, then 2; clients come back through the front;
 * - the Redis engine (session table, routing pub/sub) SIGKILLed mid-conversation and restarted
 *   on its port, empty: a send while it is down is still accepted — stored before delivery
 *   (CH-03), the history is the queue — and reaches every member once it is back;
 * - the PostgreSQL engine SIGKILLed mid-conversation and restarted on its port and data
 *   directory (crash recovery): a send while it is down is refused with a 503 that says
 *   "resend" (the clients' outbox resends with the same clientMsgId; an HTTP sender does it
 *   by hand) and is stored once, after it is back.
 *
 * The engines hurt are private ones on free ports (lab's spawnRedis / spawnPostgres), never
 * the shared 6379 / 5432; the other engine of each test is the shared one.
 *
 * Scale, stated: per seed and test, 3 conversations, 6 clients, 60 messages from the clients
 * (+1 over HTTP in each engine test); the deploy SIGTERMs 3 gateways one by one; each engine
 * test kills its engine once for ~15 sends. One seed runs in CI (CHAT_KILL_SEEDS=1,2,3 runs more).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { int, seededRandom } from "@casebook/kit/random";
import { spawnPostgres } from "@casebook/lab/spawn-postgres";
import { spawnRedis } from "@casebook/lab/spawn-redis";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { STREAM_MODULE_PATH } from "../src/edge/l4-front.ts";
import { type KillWorld, startKillWorld, USERS } from "./kill-world.ts";

const SEEDS = (process.env.CHAT_KILL_SEEDS ?? "1").split(",").map(Number);
const SENDS = 60;
/** CH-27: the close code of a draining gateway, "reconnect with jitter". */
const CLOSE_DRAINING = 4000;

/** One send over the send service's HTTP route, as an app backend would: its status and body. */
async function httpSend(world: KillWorld, chatId: string, clientMsgId: string) {
  const res = await fetch(`${world.apiUrl}/v1/conversations/${chatId}/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${await world.token("u0")}`, "content-type": "application/json" },
    body: JSON.stringify({ clientMsgId, body: `http ${clientMsgId}` }),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, body: (await res.json()) as { code?: string; message?: { id: string } } };
}

for (const seed of SEEDS) {
  test(`CH-01 CH-27 seed ${seed}: 60 sends across a rolling deploy (every gateway SIGTERMed in turn, 4000 to its clients) — no lost, duplicate, reordered or skipped message`, async (t) => {
    if (!existsSync(STREAM_MODULE_PATH)) return t.skip("nginx's stream module is not installed");
    const dbUrl = await requirePostgres(t);
    const redisUrl = dbUrl && (await requireRedis(t));
    if (!dbUrl || !redisUrl) return;
    const rng = seededRandom(seed);
    const world = await startKillWorld(t, { dbUrl, redisUrl, seed, name: "chat_dep" });

    // Gateway k is deployed at send deployAt[k]; the sends wait there for the step before to end
    // (exited, started again, ready), so the deploy rolls one gateway at a time under the sends.
    const deployAt = [5 + int(rng, 5), 22 + int(rng, 5), 40 + int(rng, 5)];
    const exitCodes: (number | null)[] = [];
    let step: Promise<void> = Promise.resolve();
    for (let n = 0; n < SENDS; n++) {
      const k = deployAt.indexOf(n);
      if (k >= 0) {
        await step;
        step = world.replaceGateway(k, async (gw) => void exitCodes.push(await gw.term()));
      }
      void world.send(n, rng);
      await sleep(20 + int(rng, 30));
    }
    await step;
    assert.deepEqual(exitCodes, [0, 0, 0], "each gateway drained and exited cleanly");
    // Each client's first close came from the drain of the gateway it was on.
    for (const user of USERS) {
      assert.equal(world.closeCodes.get(user)![0], CLOSE_DRAINING, `${user}'s first close`);
    }
    await world.settle(SENDS);
  });

  test(`CH-01 CH-03 seed ${seed}: 60 sends across a SIGKILLed Redis (sessions, routing) restarted empty on its port — sends accepted while it is down, every one displayed once, in order`, async (t) => {
    if (!existsSync(STREAM_MODULE_PATH)) return t.skip("nginx's stream module is not installed");
    const dbUrl = await requirePostgres(t);
    if (!dbUrl) return;
    const redis = await spawnRedis();
    const rng = seededRandom(seed);
    const world = await startKillWorld(t, {
      dbUrl,
      redisUrl: redis.url,
      seed,
      name: "chat_rk",
      engines: [redis],
    });

    const killAt = 15 + int(rng, 5);
    const restartAt = killAt + 15;
    for (let n = 0; n < SENDS; n++) {
      if (n === killAt) {
        await redis.kill();
        // CH-03: stored before delivery — the send is accepted with no Redis at all.
        const down = await httpSend(world, world.chats[0]!, randomUUID());
        assert.equal(down.status, 201, `an HTTP send while Redis is down: ${JSON.stringify(down.body)}`);
        world.acknowledge({ chatId: world.chats[0]!, id: down.body.message!.id });
      }
      if (n === restartAt) await redis.restart();
      void world.send(n, rng);
      await sleep(20 + int(rng, 30));
    }
    await world.settle(SENDS + 1);
  });

  test(`CH-01 CH-03 seed ${seed}: 60 sends across a SIGKILLed PostgreSQL restarted on its port and data directory — sends refused with 503 while it is down, resent, every one stored and displayed once, in order`, async (t) => {
    if (!existsSync(STREAM_MODULE_PATH)) return t.skip("nginx's stream module is not installed");
    const redisUrl = await requireRedis(t);
    if (!redisUrl) return;
    const postgres = await spawnPostgres();
    const rng = seededRandom(seed);
    const world = await startKillWorld(t, {
      dbUrl: postgres.url,
      redisUrl,
      seed,
      name: "chat_pk",
      engines: [postgres],
    });

    const killAt = 15 + int(rng, 5);
    const restartAt = killAt + 15;
    const clientMsgId = randomUUID();
    for (let n = 0; n < SENDS; n++) {
      if (n === killAt) {
        await postgres.kill();
        // While it is down a send is refused, saying so: 503, resend with the same clientMsgId.
        const down = await httpSend(world, world.chats[2]!, clientMsgId);
        assert.equal(down.status, 503, `an HTTP send while PostgreSQL is down: ${JSON.stringify(down.body)}`);
        assert.equal(down.body.code, "SQL_UNAVAILABLE");
      }
      if (n === restartAt) {
        await postgres.restart();
        const again = await httpSend(world, world.chats[2]!, clientMsgId);
        assert.equal(again.status, 201, `the resend once it is back: ${JSON.stringify(again.body)}`);
        world.acknowledge({ chatId: world.chats[2]!, id: again.body.message!.id });
      }
      void world.send(n, rng);
      await sleep(20 + int(rng, 30));
    }
    await world.settle(SENDS + 1);
  });
}
