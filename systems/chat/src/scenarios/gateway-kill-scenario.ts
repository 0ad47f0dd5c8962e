/**
 * The console's fault scenario for chat (000 §2 "falhas": a gateway dies; CH-01, CH-14, CH-27
 * shown live): a deployment of its own — a PRIVATE redis-server (lab's spawner), a send service
 * on a private PGlite in a temporary directory (never this service's store), two gateway
 * processes and the L4 front (nginx `stream`) over them — with clients of the client library
 * talking in three groups through the front. Mid-conversation the gateway holding the most
 * sockets is SIGKILLed: its clients reconnect through the front to the one left, resend their
 * outbox with the same clientMsgIds and sync after their cursors. The plot counts, as they grow,
 * the messages sent (acknowledged), the messages displayed (every member's screen) and the
 * reconnects; the sentence runs the history checker (src/domain/history-checker.ts) over what
 * every client displayed: lost, duplicate, reordered, skipped.
 *
 * Bounded: the run's 150 s (its signal; RUN_BOUND_MS), sends for `sendMs` (and until `minSends` were made: a
 * loaded machine's slow loop still makes enough to show something), the drain by `recoveryMaxMs`; every
 * process, the front, the Redis and the directory are stopped or removed in every case.
 *
 * @example
 * new ScenarioRuns([gatewayKillScenario(main)]);
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { int, seededRandom } from "@casebook/kit/random";
import { freePort } from "@casebook/lab/free-port";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { type SpawnedRedis, spawnRedis } from "@casebook/lab/spawn-redis";
import { ChatClient } from "../client/chat-client.ts";
import {
  type Acknowledged,
  type Anomaly,
  type ClientHistory,
  checkHistories,
  type Displayed,
} from "../domain/history-checker.ts";
import { type ChatProcess, startChatProcess } from "../edge/chat-process.ts";
import { l4StreamBlock, STREAM_MODULE_PATH } from "../edge/l4-front.ts";
import type { RunningSystem, StartMain } from "../running-system.ts";

export interface GatewayKillOptions {
  /** How long clients send, from the first send. Default 6 000. */
  sendMs?: number;
  /** When, after the first send, the busiest gateway is SIGKILLed. Default 2 000. */
  killAtMs?: number;
  /** One send (by a client drawn from a seeded source) this often. Default 100. */
  sendEveryMs?: number;
  /** Sends made at least, however long `sendEveryMs` stretches on a loaded machine. Default 40. */
  minSends?: number;
  /** Longest wait, once sending stops, for every send acknowledged and every display made. Default 20 000. */
  recoveryMaxMs?: number;
}

const DEFAULT_SEND_MS = 6_000;
const DEFAULT_KILL_AT_MS = 2_000;
const DEFAULT_SEND_EVERY_MS = 100;
const DEFAULT_MIN_SENDS = 40;
const DEFAULT_RECOVERY_MAX_MS = 20_000;
/**
 * The run's bound: ~30 s on a quiet machine, but it starts a deployment (a redis-server, a send
 * service, two gateway processes, nginx) before the first send, and on a loaded 2-core host
 * those starts alone took most of a 60 s bound (a CI run at load ~20 stopped there).
 */
const RUN_BOUND_MS = 150_000;
/** How often the plot gets a point per line. */
const SAMPLE_MS = 250;
const GATEWAYS = ["gw-1", "gw-2"];
const USERS = ["ana", "bia", "caio", "davi", "eva", "fabio"];
/** Three groups of four, each user in two: a killed gateway leaves members on both sides. */
const GROUPS = [
  ["ana", "bia", "caio", "davi"],
  ["caio", "davi", "eva", "fabio"],
  ["ana", "bia", "eva", "fabio"],
];
const SERIES = {
  sent: "messages sent (acknowledged to the sender)",
  displayed: "messages displayed (summed over every member's screen)",
  reconnects: "reconnects through the front",
};

/** What the run records: the checker's input, the reconnects, the kill. */
interface Tally {
  acknowledged: Acknowledged[];
  displayed: Map<string, Displayed[]>;
  reconnects: number[];
  sendFailures: number;
  killedAtMs?: number;
  killed?: { gateway: string; sockets: number };
}

/** Everything the run starts; `close` stops all of it, never throwing. */
class PrivateWorld {
  redis?: SpawnedRedis;
  api?: RunningSystem;
  readonly gateways: ChatProcess[] = [];
  front?: SpawnedNginx;
  readonly clients: ChatClient[] = [];
  readonly dataDir = mkdtempSync(join(tmpdir(), "casebook-chat-scenario-"));

  async close(): Promise<void> {
    for (const c of this.clients) c.close();
    await Promise.allSettled(this.gateways.map((g) => g.kill()));
    await Promise.allSettled([this.front?.stop()]);
    await Promise.allSettled([this.api?.close()]);
    await Promise.allSettled([this.redis?.stop()]);
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

async function startWorld(
  world: PrivateWorld,
  startMain: StartMain,
): Promise<{ frontUrl: string; issuer: string }> {
  world.redis = await spawnRedis({ install: false });
  const issuer = randomBytes(24).toString("base64url");
  const common = {
    REDIS_URL: world.redis.url,
    CHAT_REDIS_PREFIX: "scenario:",
    CHAT_JWT_SECRET: randomBytes(32).toString("base64url"),
    CHAT_ISSUER_TOKEN: issuer,
    CHAT_DRAIN_MS: "100",
    LOG_LEVEL: "warn",
  };
  // Only these settings: the running system's DATABASE_URL and REDIS_URL never reach the world.
  world.api = await startMain({
    ...common,
    CHAT_ROLE: "api",
    PORT: "0",
    HOST: "127.0.0.1",
    CASEBOOK_DATA: world.dataDir,
  });
  const apiUrl = world.api.url;
  const started = await Promise.allSettled(
    GATEWAYS.map((id) =>
      startChatProcess(id, {
        ...common,
        CHAT_ROLE: "gateway",
        CHAT_API_URL: apiUrl,
        CHAT_GATEWAY_ID: id,
      }),
    ),
  );
  for (const s of started) if (s.status === "fulfilled") world.gateways.push(s.value);
  const failed = started.find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  const frontPort = await freePort();
  world.front = await spawnNginx({
    main: l4StreamBlock({
      listenPort: frontPort,
      gateways: world.gateways.map((g) => `127.0.0.1:${g.port}`),
    }),
    http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "front\\n"; } }`,
  });
  return { frontUrl: `ws://127.0.0.1:${frontPort}/v1/socket`, issuer };
}

async function post(url: string, bearer: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const json = (await res.json()) as Record<string, unknown>;
  if (res.status >= 300) throw new Error(`${url}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function until(check: () => boolean, maxMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = performance.now() + maxMs;
  while (performance.now() < deadline) {
    if (check()) return true;
    await sleep(25, undefined, { signal });
  }
  return check();
}

export function gatewayKillScenario(startMain: StartMain, options: GatewayKillOptions = {}): Scenario {
  const sendMs = options.sendMs ?? DEFAULT_SEND_MS;
  const killAtMs = options.killAtMs ?? DEFAULT_KILL_AT_MS;
  const sendEveryMs = options.sendEveryMs ?? DEFAULT_SEND_EVERY_MS;
  const minSends = options.minSends ?? DEFAULT_MIN_SENDS;
  const recoveryMaxMs = options.recoveryMaxMs ?? DEFAULT_RECOVERY_MAX_MS;
  return {
    id: "gateway-kill",
    title: "A gateway SIGKILLed mid-conversation",
    line: `${USERS.length} clients talking in 3 groups through an L4 front over 2 private gateway processes; the busiest gateway SIGKILLed ${killAtMs / 1_000} s in: its clients reconnect through the front, resend and resync — nothing lost, nothing displayed twice.`,
    xLabel: "s from the first send",
    yLabel: "count so far",
    timeoutMs: RUN_BOUND_MS,
    run: async (ctx) => {
      if (!existsSync(STREAM_MODULE_PATH)) {
        throw new Error(
          `nginx's stream module (${STREAM_MODULE_PATH}, Debian libnginx-mod-stream) is needed for the L4 front`,
        );
      }
      const world = new PrivateWorld();
      try {
        const at = await startWorld(world, startMain);
        ctx.progress(0.15);
        const tally = await talkThroughKill(ctx, world, at, {
          sendMs,
          killAtMs,
          sendEveryMs,
          minSends,
          recoveryMaxMs,
        });
        return sentence(tally, checkOf(tally), recoveryMaxMs);
      } finally {
        await world.close();
      }
    },
  };
}

function chatsOf(chats: readonly string[], user: string): string[] {
  return chats.filter((_, i) => GROUPS[i]!.includes(user));
}

async function talkThroughKill(
  ctx: ScenarioContext,
  world: PrivateWorld,
  at: { frontUrl: string; issuer: string },
  o: Required<GatewayKillOptions>,
): Promise<Tally & { chats: string[] }> {
  const { signal } = ctx;
  const apiUrl = world.api!.url;
  const token = async (userId: string) =>
    String((await post(`${apiUrl}/v1/tokens`, at.issuer, { userId, deviceId: "phone" })).token);
  const chats: string[] = [];
  for (const members of GROUPS) {
    const created = await post(`${apiUrl}/v1/conversations`, await token(members[0]!), {
      kind: "group",
      title: `${members.join(", ")}`,
      members: members.slice(1),
    });
    chats.push(String(created.id));
  }
  const tally: Tally = { acknowledged: [], displayed: new Map(), reconnects: [], sendFailures: 0 };
  let firstSendMs = 0;
  const elapsedS = () => Math.max(0, performance.now() - firstSendMs) / 1_000;
  for (const [i, user] of USERS.entries()) {
    const client = new ChatClient({
      url: at.frontUrl,
      token: () => token(user),
      reconnect: { baseMs: 50, capMs: 1_000 },
      random: seededRandom(`gateway-kill-${i}`),
    });
    tally.displayed.set(user, []);
    client.onMessage((m) => tally.displayed.get(user)!.push({ chatId: m.chatId, id: m.id, seq: m.seq }));
    let opened = 0;
    client.onState((state) => {
      if (state !== "open") return;
      opened += 1;
      if (opened > 1) tally.reconnects.push(performance.now());
    });
    for (const chatId of chatsOf(chats, user)) client.watch(chatId);
    client.connect();
    world.clients.push(client);
  }
  if (!(await until(() => world.clients.every((c) => c.connected), 20_000, signal))) {
    throw new Error("the clients did not all connect through the front within 20 s");
  }
  ctx.progress(0.2);

  const sampler = setInterval(() => {
    const t = elapsedS();
    ctx.point(SERIES.sent, t, tally.acknowledged.length);
    ctx.point(
      SERIES.displayed,
      t,
      [...tally.displayed.values()].reduce((n, d) => n + d.length, 0),
    );
    ctx.point(SERIES.reconnects, t, tally.reconnects.length);
  }, SAMPLE_MS);
  try {
    const rng = seededRandom("gateway-kill");
    const sends: Promise<void>[] = [];
    firstSendMs = performance.now();
    let n = 0;
    while (performance.now() - firstSendMs < o.sendMs || n < o.minSends) {
      if (tally.killedAtMs === undefined && performance.now() - firstSendMs >= o.killAtMs) {
        await killBusiest(world, tally);
      }
      const userIndex = int(rng, USERS.length);
      const mine = chatsOf(chats, USERS[userIndex]!);
      const chatId = mine[int(rng, mine.length)]!;
      sends.push(
        world.clients[userIndex]!.send(chatId, `message ${n++}`).then(
          (m) => void tally.acknowledged.push({ chatId, id: m.id }),
          () => {
            tally.sendFailures += 1;
          },
        ),
      );
      ctx.progress(0.2 + 0.6 * Math.min(1, (performance.now() - firstSendMs) / o.sendMs));
      await sleep(o.sendEveryMs, undefined, { signal });
    }
    const total = n;
    const expected = (user: string) =>
      tally.acknowledged.filter((a) => chatsOf(chats, user).includes(a.chatId)).length;
    const drainedFrom = performance.now();
    await until(
      () => {
        ctx.progress(0.8 + (0.2 * (performance.now() - drainedFrom)) / o.recoveryMaxMs);
        return (
          tally.acknowledged.length + tally.sendFailures === total &&
          USERS.every((u) => tally.displayed.get(u)!.length >= expected(u))
        );
      },
      o.recoveryMaxMs,
      signal,
    );
    // One more moment for a late duplicate to show, if there were one to show.
    await sleep(300, undefined, { signal });
    void Promise.allSettled(sends);
    return { ...tally, chats };
  } finally {
    clearInterval(sampler);
    const t = elapsedS();
    ctx.point(SERIES.sent, t, tally.acknowledged.length);
    ctx.point(
      SERIES.displayed,
      t,
      [...tally.displayed.values()].reduce((n, d) => n + d.length, 0),
    );
    ctx.point(SERIES.reconnects, t, tally.reconnects.length);
  }
}

/** SIGKILL of the gateway holding the most of the clients' sockets: a crash, no drain. */
async function killBusiest(world: PrivateWorld, tally: Tally): Promise<void> {
  const held = new Map<string, number>();
  for (const c of world.clients) {
    if (c.gatewayId !== undefined) held.set(c.gatewayId, (held.get(c.gatewayId) ?? 0) + 1);
  }
  const [gateway, sockets] = [...held.entries()].sort((a, b) => b[1] - a[1])[0] ?? [GATEWAYS[0]!, 0];
  const victim = world.gateways.find((g) => g.name === gateway) ?? world.gateways[0]!;
  tally.killedAtMs = performance.now();
  tally.killed = { gateway: victim.name, sockets };
  await victim.kill();
}

function checkOf(tally: Tally & { chats: string[] }): Anomaly[] {
  const histories: ClientHistory[] = USERS.map((u) => ({
    client: u,
    chats: chatsOf(tally.chats, u),
    displayed: tally.displayed.get(u)!,
  }));
  return checkHistories({ acknowledged: tally.acknowledged, histories });
}

function sentence(tally: Tally & { chats: string[] }, anomalies: Anomaly[], recoveryMaxMs: number): string {
  const count = (kind: Anomaly["kind"]) => anomalies.filter((a) => a.kind === kind).length;
  const displays = [...tally.displayed.values()].reduce((n, d) => n + d.length, 0);
  const expected = USERS.reduce(
    (n, u) => n + tally.acknowledged.filter((a) => chatsOf(tally.chats, u).includes(a.chatId)).length,
    0,
  );
  // Seqs are per conversation and gapless (the checker's skipped-offset): the highest seq
  // displayed in a conversation is how many messages its history holds.
  const stored = tally.chats.reduce((n, chatId) => {
    const seqs = [...tally.displayed.values()]
      .flat()
      .filter((d) => d.chatId === chatId)
      .map((d) => Number(d.seq));
    return n + (seqs.length === 0 ? 0 : Math.max(...seqs));
  }, 0);
  const killedAt = tally.killedAtMs ?? 0;
  const after = tally.reconnects.filter((t) => t >= killedAt).map((t) => (t - killedAt) / 1_000);
  const reconnects =
    after.length === 0
      ? "no client reconnected"
      : `${after.length} reconnect${after.length === 1 ? "" : "s"} through the front (the last ${Math.max(...after).toFixed(1)} s after the kill)`;
  const none = anomalies.length === 0;
  return (
    `${USERS.length} clients on ${GATEWAYS.length} gateways sent ${tally.acknowledged.length} messages in 3 groups` +
    `${tally.sendFailures > 0 ? ` (${tally.sendFailures} sends failed for good)` : ""}; ` +
    `${tally.killed?.gateway ?? "no gateway"} was SIGKILLed holding ${tally.killed?.sockets ?? 0} of the ${USERS.length} sockets: ${reconnects}. ` +
    `${displays} of ${expected} expected displays made${displays < expected ? ` within ${recoveryMaxMs / 1_000} s` : ""}; ` +
    `the history checker: ${count("lost")} lost, ${count("duplicate")} duplicates displayed, ` +
    `${count("order")} out of order, ${count("skipped-offset")} offsets skipped` +
    `${none ? " — nothing lost, nothing displayed twice" : ""}; ` +
    `${stored} messages in the history for ${tally.acknowledged.length} acknowledged (a send resent after the kill kept once, by its clientMsgId).`
  );
}
