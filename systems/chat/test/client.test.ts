/**
 * The client library against chat started by main(), through lab's fault proxy so the
 * link can be cut: reconnect with backoff and jitter, then sync after the cursor (CH-14);
 * a duplicate delivery shown once (CH-10); the offline outbox resent with its clientMsgId
 * and stored once (CH-09); CH-01's guarantee — nothing lost, order kept, each message shown
 * once — over a run with cuts.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { type FaultProxy, startFaultProxy } from "@casebook/lab/fault-proxy";
import { ChatClient, type ClientMessage } from "../src/client/chat-client.ts";
import { ReconnectSchedule } from "../src/client/reconnect-schedule.ts";
import { startSystem, TestSocket, type TestSystem, until } from "./system-fixture.ts";

let sys: TestSystem;
let proxy: FaultProxy;
before(async () => {
  sys = await startSystem();
  proxy = await startFaultProxy({ upstream: new URL(sys.running.url).host });
});
after(async () => {
  await proxy?.close();
  await sys?.close();
});

function client(userId: string, deviceId = "phone") {
  const c = new ChatClient({
    url: `${proxy.url("ws")}/v1/socket`,
    token: () => sys.token(userId, deviceId),
    reconnect: { baseMs: 50, capMs: 400 },
    random: seededRandom(userId),
  });
  const shown: ClientMessage[] = [];
  c.onMessage((m) => shown.push(m));
  return { c, shown };
}

test("CH-14 reconnect pauses grow with the attempts and are jittered: 200 clients never retry in step", () => {
  const firsts = Array.from({ length: 200 }, (_, i) => {
    const s = new ReconnectSchedule({ baseMs: 250, capMs: 30_000, random: seededRandom(i) });
    return s.nextDelayMs();
  });
  assert.ok(firsts.every((d) => d >= 0 && d < 250));
  assert.ok(new Set(firsts.map((d) => Math.floor(d))).size > 100, "spread, not a herd");
  const one = new ReconnectSchedule({ baseMs: 250, capMs: 30_000, random: { next: () => 0.999 } });
  const delays = Array.from({ length: 10 }, () => one.nextDelayMs());
  assert.ok(delays[9]! <= 30_000 && delays[9]! > 29_000, "capped");
  assert.ok(delays[3]! > delays[2]!, "growing");
});

test("CH-14 CH-01 a cut link: the client reconnects with jitter, syncs after its cursor, shows everything once and in order", async () => {
  const ana = await sys.token("ana");
  const { json: chat } = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "group",
    title: "g",
    members: ["bia"],
  });
  const { c, shown } = client("bia");
  c.watch(chat.id);
  c.connect();
  await until(() => c.connected, "the first connection");
  const post = (body: string) =>
    sys.api(ana, "POST", `/v1/conversations/${chat.id}/messages`, { clientMsgId: crypto.randomUUID(), body });
  for (let i = 1; i <= 3; i++) await post(`m${i}`);
  await until(() => shown.length === 3, "3 live messages");
  proxy.cutAll();
  await proxy.refuse(true);
  await until(() => !c.connected, "the cut");
  for (let i = 4; i <= 8; i++) await post(`m${i}`); // written while bia is away
  await until(() => c.delaysMs.length >= 2, "two refused reconnects");
  await proxy.heal();
  await until(() => shown.length === 8, "the sync after the cursor");
  assert.deepEqual(
    shown.map((m) => m.body),
    ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"],
  );
  assert.deepEqual(
    shown.map((m) => m.seq),
    ["1", "2", "3", "4", "5", "6", "7", "8"],
  );
  assert.ok(
    c.delaysMs.every((d) => d < 400),
    "bounded by the cap",
  );
  c.close();
});

test("CH-10 a resend delivers the stored message again (at-least-once): a raw socket sees it twice, the client shows it once", async () => {
  const carla = await sys.token("carla");
  const { json: chat } = await sys.api<{ id: string }>(carla, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["davi"],
  });
  const { c, shown } = client("davi");
  c.watch(chat.id);
  c.connect();
  const raw = await TestSocket.open(sys.running.url, await sys.token("davi", "raw"));
  await until(() => c.connected, "connected");
  const body = { clientMsgId: crypto.randomUUID(), body: "once" };
  await sys.api(carla, "POST", `/v1/conversations/${chat.id}/messages`, body);
  // The sender did not hear back and resends: the service routes the stored message again.
  const resent = await sys.api<{ created: boolean }>(
    carla,
    "POST",
    `/v1/conversations/${chat.id}/messages`,
    body,
  );
  assert.equal(resent.json.created, false);
  const first = await raw.next((f) => f.action === "message");
  const second = await raw.next((f) => f.action === "message");
  // The same stored message (id, seq, body…) twice. Its receipt fields may have moved between the
  // two deliveries — davi's client acknowledged the first before the resend read the row back.
  const { deliveredAt: _d1, readAt: _r1, ...firstStored } = first.message as Record<string, unknown>;
  const { deliveredAt: _d2, readAt: _r2, ...secondStored } = second.message as Record<string, unknown>;
  assert.deepEqual(secondStored, firstStored, "the same message, delivered twice");
  // Frames on one socket keep their order: once "after" is shown, the duplicate was handled.
  await sys.api(carla, "POST", `/v1/conversations/${chat.id}/messages`, {
    clientMsgId: crypto.randomUUID(),
    body: "after",
  });
  await until(() => shown.length === 2, "the next message");
  assert.deepEqual(
    shown.map((m) => m.body),
    ["once", "after"],
  );
  await raw.close();
  c.close();
});

test("CH-09 the offline outbox: sent while cut, resent after reconnect, stored once", async () => {
  const eva = await sys.token("eva");
  const { json: chat } = await sys.api<{ id: string }>(eva, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["fred"],
  });
  const { c } = client("eva");
  c.watch(chat.id);
  c.connect();
  await until(() => c.connected, "connected");
  await proxy.refuse(true);
  proxy.cutAll();
  await until(() => !c.connected, "cut");
  const sending = [c.send(chat.id, "queued 1"), c.send(chat.id, "queued 2")];
  assert.equal(c.outboxSize, 2);
  await proxy.heal();
  const stored = await Promise.all(sending);
  assert.deepEqual(
    stored.map((m) => m.body),
    ["queued 1", "queued 2"],
  );
  assert.equal(c.outboxSize, 0);
  const history = await sys.api<{ messages: unknown[] }>(
    eva,
    "GET",
    `/v1/conversations/${chat.id}/messages?after=0`,
  );
  assert.equal(history.json.messages.length, 2);
  c.close();
});

test("CH-09 an answer lost on its way back: the outbox resends the same clientMsgId, the service answers with the first message, stored once", async () => {
  const gil = await sys.token("gil");
  const { json: chat } = await sys.api<{ id: string }>(gil, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["hal"],
  });
  const stored = async () =>
    (
      await sys.api<{ messages: ClientMessage[] }>(
        gil,
        "GET",
        `/v1/conversations/${chat.id}/messages?after=0`,
      )
    ).json.messages;
  const { c } = client("gil");
  c.watch(chat.id);
  c.connect();
  await until(() => c.connected, "connected");
  // The frame reaches the service; its answer is held on the way back, then the link is cut.
  proxy.setLatency(5_000, { direction: "down" });
  const sending = c.send(chat.id, "is this stored twice?");
  let rows: ClientMessage[] = [];
  for (let i = 0; i < 200 && rows.length === 0; i++) {
    rows = await stored();
    if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.equal(rows.length, 1, "the service stored the message before the answer was lost");
  proxy.cutAll();
  await proxy.heal();
  const answered = await sending;
  assert.equal(answered.id, rows[0]!.id, "the resend was answered with the first message");
  assert.equal((await stored()).length, 1, "stored once");
  c.close();
});
