/**
 * Gateways behind the L4 front (CH-23, CH-27), as `casebook run chat --gateways 2` starts them
 * (src/edge/run-gateways.ts) on PostgreSQL and Redis: the send service in this process, a
 * private nginx with the `stream` module balancing TCP over two gateway processes. Clients
 * (the client library) know only the front; they land on both gateways and talk across
 * them; a gateway deployed with SIGTERM closes its sockets with 4000 and its clients come
 * back through the same front to the other gateway, missing nothing.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { enginesRequired, requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { ChatClient, type ClientMessage } from "../src/client/chat-client.ts";
import { STREAM_MODULE_PATH } from "../src/edge/l4-front.ts";
import { gatewayLaunchOf, mainWithGateways } from "../src/edge/run-gateways.ts";
import { main } from "../src/main.ts";
import { until } from "./system-fixture.ts";
import { deployedEnv } from "./topology-fixture.ts";

const ISSUER = "issuer-token-for-the-l4-front-test";

test("--gateways N and --front-port P are read from the command line; a bad value names its flag", () => {
  assert.equal(gatewayLaunchOf(["--edge"]), undefined);
  assert.deepEqual(gatewayLaunchOf(["--gateways", "3"]), { gateways: 3 });
  assert.deepEqual(gatewayLaunchOf(["--gateways=2", "--front-port", "8190"]), {
    gateways: 2,
    frontPort: 8190,
  });
  assert.throws(() => gatewayLaunchOf(["--gateways", "0"]), /--gateways 0/);
  assert.throws(() => gatewayLaunchOf(["--gateways", "17"]), /--gateways 17/);
  assert.throws(() => gatewayLaunchOf(["--gateways", "2", "--front-port", "x"]), /--front-port x/);
});

test("CH-23 CH-27 clients know only the L4 front: spread over two gateways, and back through it when one is deployed", async (t) => {
  if (!existsSync(STREAM_MODULE_PATH)) {
    if (enginesRequired) assert.fail(`${STREAM_MODULE_PATH} missing: apt-get install libnginx-mod-stream`);
    return t.skip("nginx's stream module is not installed (libnginx-mod-stream)");
  }
  const dbUrl = await requirePostgres(t);
  const redisUrl = dbUrl && (await requireRedis(t));
  if (!dbUrl || !redisUrl) return;
  const world = deployedEnv({ dbUrl, redisUrl, issuer: ISSUER, name: "chat_l4" });
  // `casebook run chat --gateways 2`'s launcher: the send service here, two gateway processes, the front.
  const running = await mainWithGateways(
    main,
    { gateways: 2 },
    { ...process.env, ...world.env, PORT: "0", LOG_LEVEL: "warn" },
  );
  const clients: ChatClient[] = [];
  t.after(async () => {
    for (const c of clients) c.close();
    await running.close();
    await world.cleanup();
  });
  const api = running;
  const gateways = running.gateways;
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${api.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const token = async (userId: string) =>
    (await call(ISSUER, "POST", "/v1/tokens", { userId, deviceId: "phone" })).token as string;
  const users = ["u1", "u2", "u3", "u4"];
  const owner = await token("u1");
  const chatId = (
    await call(owner, "POST", "/v1/conversations", { kind: "group", title: "l4", members: users.slice(1) })
  ).id as string;
  const shown = new Map<string, ClientMessage[]>();
  for (const [i, user] of users.entries()) {
    const client = new ChatClient({
      url: running.frontUrl,
      token: () => token(user),
      reconnect: { baseMs: 50, capMs: 500 },
      random: seededRandom(i),
    });
    shown.set(user, []);
    client.onMessage((m) => shown.get(user)!.push(m));
    client.watch(chatId);
    client.connect();
    clients.push(client);
    await until(() => client.connected, `${user} connected`);
  }
  const before = new Set(clients.map((c) => c.gatewayId));
  assert.deepEqual([...before].sort(), ["gw-1", "gw-2"], "least_conn spread the clients over both gateways");

  await clients[0]!.send(chatId, "one");
  await until(() => users.every((u) => shown.get(u)!.length === 1), "one everywhere, across gateways");

  // gw-1 is deployed: its clients get 4000 and come back through the front to gw-2.
  await gateways[0]!.stop();
  await until(() => clients.every((c) => c.connected && c.gatewayId === "gw-2"), "everyone on gw-2");
  await clients[1]!.send(chatId, "two");
  await until(() => users.every((u) => shown.get(u)!.length === 2), "two everywhere");
  for (const user of users)
    assert.deepEqual(
      shown.get(user)!.map((m) => m.body),
      ["one", "two"],
    );
});
