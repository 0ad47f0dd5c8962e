/**
 * The world of the CH-01 fault schedules (gateway-kills, gateway-deploy): chat deployed as in
 * production on a PostgreSQL and a Redis — the send service in this process (a restart is its
 * close and a new start on the same port, as SIGTERM does to the process), 3 gateway processes
 * behind the nginx L4 front — and 6 clients of the client library in 3 group conversations of
 * 4 members. It records what the send service acknowledged to each sender and what each client
 * displayed, and `settle` runs the history checker over them (lost acknowledged message,
 * duplicate display, order broken, skipped offset) and counts the stored rows.
 *
 * A schedule (which process or engine to hurt, when) stays in its test; the world only offers
 * the moves: replace a gateway (SIGKILL or SIGTERM, then a start on its port), restart the send
 * service, send a seeded message, acknowledge a send made outside the clients.
 *
 * @example
 * const world = await startKillWorld(t, { dbUrl, redisUrl, seed, name: "chat_kill" });
 * await world.send(0, rng);
 * await world.replaceGateway(1, (gw) => gw.kill(), 400);
 * await world.settle(1); // the checker finds nothing; 1 row stored
 */
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { int, type RandomSource, seededRandom } from "@casebook/kit/random";
import { freePort } from "@casebook/lab/free-port";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { ChatClient } from "../src/client/chat-client.ts";
import {
  type Acknowledged,
  type ClientHistory,
  checkHistories,
  type Displayed,
} from "../src/domain/history-checker.ts";
import { l4StreamBlock } from "../src/edge/l4-front.ts";
import { main, type RunningSystem } from "../src/main.ts";
import { type ChatProcess, deployedEnv, startChatProcess } from "./topology-fixture.ts";

const ISSUER = "issuer-token-for-the-kill-test";
export const USERS = ["u0", "u1", "u2", "u3", "u4", "u5"];
export const GROUPS = [
  ["u0", "u1", "u2", "u3"],
  ["u2", "u3", "u4", "u5"],
  ["u0", "u1", "u4", "u5"],
];
const GATEWAYS = 3;
/** Every client connected at the start; every send acknowledged at the end. */
const CONNECT_TIMEOUT_MS = 30_000;
const ACKNOWLEDGED_TIMEOUT_MS = 60_000;
/** How long the displays may take to catch up after the last acknowledgement. */
const DISPLAYED_TIMEOUT_MS = 60_000;

export interface KillWorldOptions {
  readonly dbUrl: string;
  readonly redisUrl: string;
  readonly seed: number;
  /** Prefix of the schema and the Redis key prefix. */
  readonly name: string;
  /** Settings for the send service and every gateway on top of the deployed ones. */
  readonly env?: Readonly<Record<string, string>>;
  /** Private engines the world runs on: stopped after its own cleanup (which still needs them). */
  readonly engines?: readonly { stop(): Promise<void> }[];
}

export interface KillWorld {
  readonly apiUrl: string;
  /** The conversations, in GROUPS' order. */
  readonly chats: readonly string[];
  /** The gateway processes now, by index (a replaced one is swapped in place). */
  readonly gateways: readonly ChatProcess[];
  /** Close codes each client's socket got, by user. */
  readonly closeCodes: ReadonlyMap<string, readonly number[]>;
  /** A user token, from the send service (no database or Redis behind it). */
  token(userId: string): Promise<string>;
  chatsOf(userId: string): string[];
  /**
   * Message `m<n>` from a seeded sender to one of its conversations, through its client (the
   * outbox resends it after a reconnect or a transient refusal, with the same clientMsgId).
   * Draws two numbers from `rng` before it returns; the promise settles once acknowledged.
   */
  send(n: number, rng: RandomSource): Promise<void>;
  /** A message the send service accepted outside the clients (an HTTP send): every member must display it. */
  acknowledge(message: Acknowledged): void;
  /** Stops gateway `k` with `stop`, waits `pauseMs`, starts it again on its port and waits until it is ready. */
  replaceGateway(
    k: number,
    stop: (gateway: ChatProcess) => Promise<unknown>,
    pauseMs?: number,
  ): Promise<void>;
  restartApi(): Promise<void>;
  /**
   * Waits for every client send to be acknowledged and every member to display what was
   * acknowledged, then asserts the history checker finds nothing and `rows` messages are stored.
   */
  settle(rows: number): Promise<void>;
}

export async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(25);
  }
  return check();
}

export async function startKillWorld(t: TestContext, options: KillWorldOptions): Promise<KillWorld> {
  const world = deployedEnv({ ...options, issuer: ISSUER });
  const common = { ...world.env, ...options.env };
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
    const cleaned = await Promise.allSettled([world.cleanup()]);
    const stopped = await Promise.allSettled((options.engines ?? []).map((e) => e.stop()));
    const failed = [...steps, ...cleaned, ...stopped]
      .filter((s) => s.status === "rejected")
      .map((s) => s.reason);
    if (failed.length > 0) throw new AggregateError(failed, "kill world cleanup");
  });
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
    Array.from({ length: GATEWAYS }, (_, k) => startChatProcess(`gw-${k}`, gatewayEnv(`gw-${k}`))),
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
  const closeCodes = new Map<string, number[]>();
  for (const [i, user] of USERS.entries()) {
    const client = new ChatClient({
      url: `ws://127.0.0.1:${frontPort}/v1/socket`,
      token: () => token(user),
      reconnect: { baseMs: 50, capMs: 1_000 },
      random: seededRandom(`${options.seed}-${i}`),
    });
    displayed.set(user, []);
    closeCodes.set(user, []);
    client.onMessage((m) => displayed.get(user)!.push({ chatId: m.chatId, id: m.id, seq: m.seq }));
    client.onState((state, code) => {
      if (state === "closed") closeCodes.get(user)!.push(code ?? 0);
    });
    for (const chatId of chatsOf(user)) client.watch(chatId);
    client.connect();
    clients.push(client);
  }
  assert.ok(
    await until(() => clients.every((c) => c.connected), CONNECT_TIMEOUT_MS),
    "every client connected",
  );

  const acknowledged: Acknowledged[] = [];
  const refused: string[] = [];
  let sent = 0;
  let acked = 0;
  const sends: Promise<void>[] = [];
  return {
    apiUrl,
    chats,
    gateways,
    closeCodes,
    token,
    chatsOf,
    send(n, rng) {
      const userIndex = int(rng, USERS.length);
      const mine = chatsOf(USERS[userIndex]!);
      const chatId = mine[int(rng, mine.length)]!;
      sent++;
      const settled = clients[userIndex]!.send(chatId, `m${n}`).then(
        (m) => {
          acked++;
          acknowledged.push({ chatId, id: m.id });
        },
        (err: Error) => void refused.push(`m${n}: ${err.message}`),
      );
      sends.push(settled);
      return settled;
    },
    acknowledge(message) {
      acknowledged.push(message);
    },
    async replaceGateway(k, stop, pauseMs = 0) {
      const victim = gateways[k]!;
      await stop(victim);
      procs.delete(victim);
      if (pauseMs > 0) await sleep(pauseMs);
      gateways[k] = await startChatProcess(`gw-${k}`, gatewayEnv(`gw-${k}`), victim.port);
      procs.add(gateways[k]!);
    },
    async restartApi() {
      await api?.close();
      api = await startApi(apiPort);
    },
    async settle(rows) {
      assert.ok(
        await until(() => acked + refused.length === sent, ACKNOWLEDGED_TIMEOUT_MS),
        `every send answered (${acked} acknowledged, ${refused.length} refused, of ${sent})`,
      );
      assert.deepEqual(refused, [], "no send refused for good");
      const expected = (user: string) => acknowledged.filter((a) => chatsOf(user).includes(a.chatId)).length;
      await until(() => USERS.every((u) => displayed.get(u)!.length >= expected(u)), DISPLAYED_TIMEOUT_MS);
      const histories: ClientHistory[] = USERS.map((u) => ({
        client: u,
        chats: chatsOf(u),
        displayed: displayed.get(u)!,
      }));
      assert.deepEqual(checkHistories({ acknowledged, histories }), []);
      // Duplicate sends (outbox resends after a fault) were stored once: `rows` rows, no more.
      const db = await openDatabase({ system: "chat", url: options.dbUrl, schema: world.schema });
      const { rows: counted } = await db
        .query<{ n: bigint }>("SELECT count(*) AS n FROM messages")
        .finally(() => db.close());
      assert.equal(counted[0]!.n, BigInt(rows));
      await Promise.all(sends);
    },
  };
}
