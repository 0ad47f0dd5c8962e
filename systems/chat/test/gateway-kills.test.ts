/**
 * CH-01's guarantee under faults, checked by the history checker (src/domain/history-checker.ts:
 * lost acknowledged message, duplicate display, order broken, skipped offset) over what
 * every client displayed. The deployed shape on PostgreSQL and Redis: a send service (in this
 * process), 3 gateway processes behind the L4 front, 6 clients (the client library) in 3 group
 * conversations of 4 members. A seeded schedule of 60 sends, with SIGKILLs of gateways
 * mid-conversation (each restarted 400 ms later) and a restart of the send service.
 *
 * Scale, stated: 3 conversations, 6 clients, 60 messages, 2 gateway kills, 1 send-service
 * restart, per seed; one seed runs in CI (CHAT_KILL_SEEDS=1,2,3 runs more).
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { int, seededRandom } from "@casebook/kit/random";
import { freePort } from "@casebook/lab/free-port";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { ChatClient } from "../src/client/chat-client.ts";
import {
  type Acknowledged,
  type ClientHistory,
  checkHistories,
  type Displayed,
} from "../src/domain/history-checker.ts";
import { l4StreamBlock, STREAM_MODULE_PATH } from "../src/edge/l4-front.ts";
import { main, type RunningSystem } from "../src/main.ts";
import { type ChatProcess, deployedEnv, startChatProcess } from "./topology-fixture.ts";

const ISSUER = "issuer-token-for-the-kill-test";
const SEEDS = (process.env.CHAT_KILL_SEEDS ?? "1").split(",").map(Number);
const SENDS = 60;
const USERS = ["u0", "u1", "u2", "u3", "u4", "u5"];
const GROUPS = [
  ["u0", "u1", "u2", "u3"],
  ["u2", "u3", "u4", "u5"],
  ["u0", "u1", "u4", "u5"],
];

async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(25);
  }
  return check();
}

for (const seed of SEEDS) {
  test(`CH-01 CH-03 CH-10 seed ${seed}: 60 sends across SIGKILLed gateways and a send-service restart — no lost, duplicate, reordered or skipped message`, async (t) => {
    if (!existsSync(STREAM_MODULE_PATH)) return t.skip("nginx's stream module is not installed");
    const dbUrl = await requirePostgres(t);
    const redisUrl = dbUrl && (await requireRedis(t));
    if (!dbUrl || !redisUrl) return;
    const rng = seededRandom(seed);
    const world = deployedEnv({ dbUrl, redisUrl, issuer: ISSUER, name: "chat_kill" });
    const common = world.env;
    const procs = new Set<ChatProcess>();
    const clients: ChatClient[] = [];
    let stopFront = async () => {};
    let api: RunningSystem | undefined;
    // Every step runs whatever another one did: a step that throws (the front already gone)
    // must not leave the gateways and the send service holding this process open forever.
    t.after(async () => {
      for (const c of clients) c.close();
      const steps = await Promise.allSettled([
        stopFront(),
        ...[...procs].map((p) => p.kill()),
        Promise.resolve().then(() => api?.close()),
      ]);
      await world.cleanup();
      const failed = steps.filter((s) => s.status === "rejected").map((s) => s.reason);
      if (failed.length > 0) throw new AggregateError(failed, "gateway-kills cleanup");
    });
    // The send service runs in this process (a restart is its close and a new start on the same
    // port, as SIGTERM does to the process); the gateways, which get SIGKILLed, are processes.
    const startApi = (port: number) =>
      main({ ...common, CHAT_ROLE: "api", PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" });
    api = await startApi(0);
    const apiUrl = api.url;
    const apiPort = Number(new URL(apiUrl).port);
    const gatewayEnv = (id: string) => ({
      ...common,
      CHAT_ROLE: "gateway",
      CHAT_API_URL: apiUrl,
      CHAT_GATEWAY_ID: id,
    });
    const gateways = await Promise.all(
      ["gw-0", "gw-1", "gw-2"].map((id) => startChatProcess(id, gatewayEnv(id))),
    );
    for (const g of gateways) procs.add(g);
    const frontPort = await freePort();
    const nginx = await spawnNginx({
      main: l4StreamBlock({ listenPort: frontPort, gateways: gateways.map((g) => `127.0.0.1:${g.port}`) }),
      http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "front\\n"; } }`,
    });
    stopFront = () => nginx.stop();

    const token = async (userId: string) => {
      const res = await fetch(`${apiUrl}/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${ISSUER}`, "content-type": "application/json" },
        body: JSON.stringify({ userId, deviceId: "phone" }),
      });
      return ((await res.json()) as { token: string }).token;
    };
    const chats: string[] = [];
    for (const members of GROUPS) {
      const res = await fetch(`${apiUrl}/v1/conversations`, {
        method: "POST",
        headers: { authorization: `Bearer ${await token(members[0]!)}`, "content-type": "application/json" },
        body: JSON.stringify({ kind: "group", title: "g", members: members.slice(1) }),
      });
      chats.push(((await res.json()) as { id: string }).id);
    }
    const chatsOf = (user: string) => chats.filter((_, i) => GROUPS[i]!.includes(user));
    const displayed = new Map<string, Displayed[]>();
    for (const [i, user] of USERS.entries()) {
      const client = new ChatClient({
        url: `ws://127.0.0.1:${frontPort}/v1/socket`,
        token: () => token(user),
        reconnect: { baseMs: 50, capMs: 1_000 },
        random: seededRandom(`${seed}-${i}`),
      });
      displayed.set(user, []);
      client.onMessage((m) => displayed.get(user)!.push({ chatId: m.chatId, id: m.id, seq: m.seq }));
      for (const chatId of chatsOf(user)) client.watch(chatId);
      client.connect();
      clients.push(client);
    }
    assert.ok(await until(() => clients.every((c) => c.connected), 30_000), "every client connected");

    const acknowledged: Acknowledged[] = [];
    const sends: Promise<void>[] = [];
    const faults: Promise<void>[] = [];
    const killAt = new Set([15 + int(rng, 5), 35 + int(rng, 5)]);
    const restartApiAt = 25 + int(rng, 5);
    for (let n = 0; n < SENDS; n++) {
      if (killAt.has(n)) {
        const k = int(rng, 3);
        const victim = gateways[k]!;
        faults.push(
          (async () => {
            await victim.kill();
            procs.delete(victim);
            await sleep(400);
            gateways[k] = await startChatProcess(`gw-${k}`, gatewayEnv(`gw-${k}`), victim.port);
            procs.add(gateways[k]!);
          })(),
        );
      }
      if (n === restartApiAt) {
        await api?.close();
        api = await startApi(apiPort);
      }
      const userIndex = int(rng, USERS.length);
      const mine = chatsOf(USERS[userIndex]!);
      const chatId = mine[int(rng, mine.length)]!;
      sends.push(
        clients[userIndex]!.send(chatId, `m${n}`).then((m) => {
          acknowledged.push({ chatId, id: m.id });
        }),
      );
      await sleep(20 + int(rng, 30));
    }
    await Promise.all(faults);
    assert.ok(
      await until(() => acknowledged.length === SENDS, 60_000),
      `every send acknowledged (${acknowledged.length}/${SENDS})`,
    );
    const expected = (user: string) => acknowledged.filter((a) => chatsOf(user).includes(a.chatId)).length;
    await until(() => USERS.every((u) => displayed.get(u)!.length >= expected(u)), 60_000);
    const histories: ClientHistory[] = USERS.map((u) => ({
      client: u,
      chats: chatsOf(u),
      displayed: displayed.get(u)!,
    }));
    assert.deepEqual(checkHistories({ acknowledged, histories }), []);
    // Duplicate sends (outbox resends after a kill) were stored once: 60 rows, no more.
    const db = await openDatabase({ system: "chat", url: dbUrl, schema: world.schema });
    const { rows } = await db
      .query<{ n: bigint }>("SELECT count(*) AS n FROM messages")
      .finally(() => db.close());
    assert.equal(rows[0]!.n, BigInt(SENDS));
    await Promise.all(sends);
  });
}
