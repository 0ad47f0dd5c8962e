/**
 * The push path against the push simulator, a real HTTP service (CH-18, CH-21, CH-22): a
 * recipient with no socket gets a push naming the chat and seq; opening the app (the client
 * library) syncs after its cursor and shows the message; a token the provider reports gone
 * (410 Unregistered) is forgotten and never pushed to again.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { ChatClient, type ClientMessage } from "../src/client/chat-client.ts";
import { createPushSim, type PushSim } from "../src/sim/push-sim.ts";
import { startSystem, type TestSystem, until } from "./system-fixture.ts";

let sim: PushSim;
let sys: TestSystem;
before(async () => {
  sim = createPushSim({ rng: seededRandom(1), log: { level: "silent" } });
  const { url } = await sim.listen({ port: 0 });
  sys = await startSystem({ CHAT_PUSH_URL: url });
});
after(async () => {
  await sys?.close();
  await sim?.close();
});

test("CH-18 CH-21 an offline recipient gets a push; opening the app syncs after its cursor and shows the message", async () => {
  const ana = await sys.token("ana");
  const bruno = await sys.token("bruno", "phone");
  const token = "fcm-token-bruno-phone-0001";
  assert.equal(
    (await sys.api(bruno, "PUT", "/v1/devices/push-token", { platform: "fcm", token })).status,
    204,
  );
  const { json: chat } = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["bruno"],
  });
  const sent = await sys.api<{ message: { seq: string; id: string } }>(
    ana,
    "POST",
    `/v1/conversations/${chat.id}/messages`,
    {
      clientMsgId: crypto.randomUUID(),
      body: "acorda",
    },
  );
  const pushes = sim.state.pushes.filter((p) => p.token === token);
  assert.equal(pushes.length, 1, "one push for the one device");
  assert.deepEqual(pushes[0]!.data, {
    chatId: chat.id,
    seq: sent.json.message.seq,
    id: sent.json.message.id,
  });
  assert.equal(pushes[0]!.body, "acorda");
  // The push woke the app: it connects and asks for what it missed after its cursor (0 here).
  const app = new ChatClient({
    url: `${sys.running.url.replace(/^http/, "ws")}/v1/socket`,
    token: () => bruno,
    random: seededRandom(2),
  });
  const shown: ClientMessage[] = [];
  app.onMessage((m) => shown.push(m));
  app.watch(pushes[0]!.data.chatId!);
  app.connect();
  await until(() => shown.length === 1, "the synced message");
  assert.equal(shown[0]!.body, "acorda");
  app.close();
});

test("CH-22 a token the provider reports gone (410 Unregistered) is forgotten: no push is attempted again", async () => {
  const carla = await sys.token("carla");
  const davi = await sys.token("davi", "tablet");
  const token = "apns-token-davi-tablet-0001";
  await sys.api(davi, "PUT", "/v1/devices/push-token", { platform: "apns", token });
  const { json: chat } = await sys.api<{ id: string }>(carla, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["davi"],
  });
  sim.state.gone.add(token); // the app was uninstalled
  const post = () =>
    sys.api(carla, "POST", `/v1/conversations/${chat.id}/messages`, {
      clientMsgId: crypto.randomUUID(),
      body: "x",
    });
  await post();
  assert.equal(sim.state.refusedGone, 1);
  await post();
  assert.equal(sim.state.refusedGone, 1, "the gone token was deleted after the first 410");
  const metrics = await (await fetch(`${sys.running.url}/metrics`)).text();
  assert.match(metrics, /^chat_pushes_total\{outcome="token-gone"\} 1$/m);
  assert.match(metrics, /^chat_pushes_total\{outcome="sent"\} [1-9]/m);
});
