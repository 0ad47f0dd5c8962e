/**
 * Typing and presence, ephemeral: never written to PostgreSQL, routed like messages through
 * the session table and the gateways' routing. In one process (role all): a typing frame
 * reaches the other members' devices and carries its expiry; the throttle and the client's
 * expiring indicators; presence read from live session rows, offline at once on a clean
 * disconnect; a channel gets neither (409 naming chatId).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ChatClient } from "../src/client/chat-client.ts";
import { TypingState } from "../src/client/typing-state.ts";
import { presenceOf } from "../src/domain/presence.ts";
import { MAX_TYPING_CHATS, TYPING_THROTTLE_MS, TYPING_TTL_MS, TypingThrottle } from "../src/domain/typing.ts";
import { startSystem, TestSocket, type TestSystem, until } from "./system-fixture.ts";

describe("the rules, without a system", () => {
  test("typing is throttled per conversation: one per interval, the remembered conversations bounded", () => {
    const throttle = new TypingThrottle();
    assert.equal(throttle.admit("1", 0), true);
    assert.equal(throttle.admit("1", TYPING_THROTTLE_MS - 1), false);
    assert.equal(throttle.admit("2", 1), true, "another conversation has its own allowance");
    assert.equal(throttle.admit("1", TYPING_THROTTLE_MS), true);
    for (let i = 0; i < MAX_TYPING_CHATS + 5; i++) throttle.admit(`c${i}`, TYPING_THROTTLE_MS);
    assert.equal(
      throttle.admit("1", TYPING_THROTTLE_MS + 1),
      true,
      "forgotten past the bound: admitted, not an error",
    );
    assert.ok(TYPING_TTL_MS > TYPING_THROTTLE_MS, "an indicator outlives the gap between two announcements");
  });

  test("the client's indicators expire, or end when that user's message arrives", () => {
    const state = new TypingState();
    assert.equal(state.mayAnnounce("1", 0), true);
    assert.equal(state.mayAnnounce("1", 10), false);
    state.heard({ chatId: "1", userId: "bia", expiresInMs: 6_000 }, 0);
    state.heard({ chatId: "1", userId: "ana", expiresInMs: 6_000 }, 1_000);
    assert.deepEqual(state.typers("1", 5_999), ["ana", "bia"]);
    assert.deepEqual(state.typers("1", 6_000), ["ana"]);
    state.messageFrom("1", "ana");
    assert.deepEqual(state.typers("1", 6_001), []);
  });

  test("CH-16 CH-25 presence comes from live session rows: a user is online while any device has one", () => {
    const row = (userId: string, deviceId: string) => ({
      userId,
      deviceId,
      gatewayId: "g",
      connectionId: `${userId}-${deviceId}`,
      expiresAtMs: 1,
    });
    assert.deepEqual(presenceOf(["ana", "bia"], [row("ana", "phone"), row("ana", "laptop")]), [
      { userId: "ana", online: true, devices: ["laptop", "phone"] },
      { userId: "bia", online: false, devices: [] },
    ]);
  });
});

describe("on a running system", () => {
  let sys: TestSystem;
  before(async () => {
    sys = await startSystem();
  });
  after(async () => {
    await sys?.close();
  });

  async function chat(kind: "group" | "channel", owner: string, others: string[]) {
    const token = await sys.token(owner);
    const { json } = await sys.api<{ id: string }>(token, "POST", "/v1/conversations", {
      kind,
      title: kind,
      members: others,
    });
    return json.id;
  }

  test("CH-04 a typing frame reaches the other members' devices with its expiry, and nothing is stored", async () => {
    const chatId = await chat("group", "ana", ["bruno", "caio"]);
    const ana = await TestSocket.open(sys.running.url, await sys.token("ana"));
    const bruno = await TestSocket.open(sys.running.url, await sys.token("bruno"));
    const brunoLaptop = await TestSocket.open(sys.running.url, await sys.token("bruno", "laptop"));
    try {
      const before = await sys.api<{ lastSeq: string }[]>(await sys.token("ana"), "GET", "/v1/conversations");
      ana.send({ action: "typing", chatId });
      for (const device of [bruno, brunoLaptop]) {
        const frame = await device.next((f) => f.action === "typing");
        assert.deepEqual(frame, {
          action: "typing",
          chatId,
          userId: "ana",
          deviceId: "phone",
          expiresInMs: TYPING_TTL_MS,
        });
      }
      ana.send({ action: "ping", ref: "after-typing" });
      await ana.next((f) => f.ref === "after-typing");
      assert.equal(ana.frames.filter((f) => f.action === "typing").length, 0, "not echoed to the typist");
      const afterTyping = await sys.api(await sys.token("ana"), "GET", "/v1/conversations");
      assert.deepEqual(afterTyping.json, before.json, "no seq taken, no message stored");
    } finally {
      for (const s of [ana, bruno, brunoLaptop]) s.ws.terminate();
    }
  });

  test("the client library: typing announced, shown to the other member, ended by that user's message; presence asked and watched", async () => {
    const chatId = await chat("group", "ivo", ["jade"]);
    const url = `${sys.running.url.replace(/^http/, "ws")}/v1/socket`;
    const ivo = new ChatClient({ url, token: () => sys.token("ivo") });
    const jade = new ChatClient({ url, token: () => sys.token("jade") });
    const seen: string[][] = [];
    jade.onTyping((id, typers) => {
      if (id === chatId) seen.push(typers);
    });
    jade.watch(chatId);
    try {
      ivo.connect();
      jade.connect();
      await until(() => ivo.connected && jade.connected, "both connected");
      ivo.typing(chatId);
      ivo.typing(chatId); // throttled in the library: one frame
      await until(() => seen.length > 0, "jade hears ivo typing");
      assert.deepEqual(jade.typers(chatId), ["ivo"]);
      await ivo.send(chatId, "done typing");
      await until(() => jade.typers(chatId).length === 0, "the message ends the indicator");
      const presence = await jade.presence(chatId);
      assert.deepEqual(
        presence.map((p) => [p.userId, p.online]),
        [
          ["ivo", true],
          ["jade", true],
        ],
      );
      const heard: Record<string, boolean> = {};
      jade.onPresence((users) => {
        for (const u of users) heard[u.userId] = u.online;
      });
      await jade.watchPresence(chatId);
      assert.deepEqual(heard, { ivo: true, jade: true }, "the watch answers the members' presence now");
      ivo.close();
      await until(() => heard.ivo === false, "jade is pushed ivo going offline");
    } finally {
      ivo.close();
      jade.close();
    }
  });

  test("CH-16 presence: online with a socket, offline at once after a clean disconnect", async () => {
    const chatId = await chat("group", "dora", ["eli"]);
    const dora = await sys.token("dora");
    const presence = async () =>
      (
        await sys.api<{ users: { userId: string; online: boolean }[] }>(
          dora,
          "GET",
          `/v1/conversations/${chatId}/presence`,
        )
      ).json.users;
    const eli = await TestSocket.open(sys.running.url, await sys.token("eli"));
    assert.deepEqual(
      (await presence()).map((u) => [u.userId, u.online]),
      [
        ["dora", false],
        ["eli", true],
      ],
    );
    const doraSocket = await TestSocket.open(sys.running.url, dora);
    doraSocket.send({ action: "presence", ref: "p", chatId });
    const frame = await doraSocket.next((f) => f.ref === "p");
    assert.deepEqual(
      (frame.users as { userId: string; online: boolean }[]).map((u) => u.online),
      [true, true],
    );
    eli.ws.close();
    await eli.closed();
    // The disconnect hook removes the row (asynchronously): offline without waiting for the TTL.
    while ((await presence()).find((u) => u.userId === "eli")?.online)
      await new Promise((resolve) => setTimeout(resolve, 20));
    doraSocket.ws.terminate();
  });

  test("CH-16 a socket watching presence is pushed a member's connect and clean disconnect; a bad watch is refused naming the field", async () => {
    const chatId = await chat("group", "lia", ["mel"]);
    const lia = await TestSocket.open(sys.running.url, await sys.token("lia"));
    try {
      lia.send({ action: "presence", ref: "w", chatId, watch: true });
      const answer = await lia.next((f) => f.ref === "w");
      assert.equal(answer.watching, true);
      assert.deepEqual(
        (answer.users as { userId: string; online: boolean }[]).map((u) => [u.userId, u.online]),
        [
          ["lia", true],
          ["mel", false],
        ],
      );
      const mel = await TestSocket.open(sys.running.url, await sys.token("mel"));
      const online = await lia.next((f) => f.action === "presence-changed");
      assert.deepEqual(online.users, [{ userId: "mel", online: true, devices: ["phone"] }]);
      mel.ws.close();
      await mel.closed();
      const offline = await lia.next((f) => f.action === "presence-changed");
      assert.deepEqual(offline.users, [{ userId: "mel", online: false, devices: [] }]);
      lia.send({ action: "presence", ref: "stop", chatId, watch: false });
      assert.equal((await lia.next((f) => f.ref === "stop")).watching, false);
      const melAgain = await TestSocket.open(sys.running.url, await sys.token("mel"));
      lia.send({ action: "ping", ref: "after-stop" });
      await lia.next((f) => f.ref === "after-stop");
      melAgain.ws.terminate();
      assert.equal(
        lia.frames.filter((f) => f.action === "presence-changed").length,
        2,
        "nothing after watch: false",
      );
      lia.send({ action: "presence", ref: "bad", chatId, watch: "yes" });
      const bad = await lia.next((f) => f.ref === "bad");
      assert.deepEqual([bad.action, bad.code, bad.field], ["error", "FRAME_INVALID", "watch"]);
    } finally {
      lia.ws.terminate();
    }
  });

  test("a channel gets no typing or presence fan-out: 409 CHAT_FANOUT_CHANNEL naming chatId; a stranger's chat is 404", async () => {
    const chatId = await chat("channel", "fabi", ["gil"]);
    const fabi = await sys.token("fabi");
    const typing = await sys.api<{ code: string; field: string }>(
      fabi,
      "POST",
      `/v1/conversations/${chatId}/typing`,
    );
    assert.equal(typing.status, 409);
    assert.equal(typing.json.code, "CHAT_FANOUT_CHANNEL");
    assert.equal(typing.json.field, "chatId");
    const presence = await sys.api(fabi, "GET", `/v1/conversations/${chatId}/presence`);
    assert.equal(presence.status, 409);
    const stranger = await sys.api(await sys.token("hugo"), "GET", `/v1/conversations/${chatId}/presence`);
    assert.equal(stranger.status, 404);
    const socket = await TestSocket.open(sys.running.url, fabi);
    try {
      socket.send({ action: "typing", chatId });
      const error = await socket.next((f) => f.action === "error");
      assert.equal(error.code, "CHAT_FANOUT_CHANNEL");
    } finally {
      socket.ws.terminate();
    }
  });
});
