/**
 * The send service and a gateway in one process (role all), through their public surfaces:
 * HTTP with user JWTs, and WebSockets. Online delivery (CH-17), multi-device fan-out
 * (CH-25), resume after a seq (CH-05/CH-18), the socket's limits and bad frames (CH-13,
 * CH-15), the heartbeat (CH-12), token refresh, and the API's strict input.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { WebSocket } from "ws";
import { startSystem, TestSocket, type TestSystem } from "./system-fixture.ts";

let sys: TestSystem;
/** The system's clock runs this far ahead of the real one: idle, lifetime and expiry without waiting. */
let aheadMs = 0;
const clock = { nowMs: () => Date.now() + aheadMs, monotonicMs: () => performance.now() };
before(async () => {
  // The longest heartbeat: these tests drive it with tick(), and the gateway's own loop, run on the
  // shifted clock between a jump and the frame that answers it, would close a socket early (4002).
  sys = await startSystem(
    { CHAT_FRAMES_PER_S: "20", CHAT_DRAIN_MS: "200", CHAT_HEARTBEAT_MS: "300000" },
    { clock },
  );
});
after(async () => {
  await sys?.close();
});

async function direct(a: string, b: string) {
  const token = await sys.token(a);
  const { status, json } = await sys.api<{ id: string }>(token, "POST", "/v1/conversations", {
    kind: "direct",
    members: [b],
  });
  assert.ok(status === 201 || status === 200, JSON.stringify(json));
  return { chatId: json.id, token };
}

describe("HTTP API", () => {
  test("CH-15 no token is 401 AUTH_MISSING; a forged one 401 AUTH_INVALID; the issuer route needs the issuer token", async () => {
    const none = await fetch(`${sys.running.url}/v1/conversations`);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { code: string }).code, "AUTH_MISSING");
    const forged = await sys.api("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbmEifQ.x", "GET", "/v1/conversations");
    assert.equal(forged.status, 401);
    assert.equal(forged.json.code, "AUTH_INVALID");
    const user = await sys.token("ana");
    const issue = await sys.api(user, "POST", "/v1/tokens", { userId: "ana", deviceId: "phone" });
    assert.equal(issue.status, 401, "a user token cannot mint tokens");
  });

  test("CH-09 POST a message twice with one clientMsgId: 201 then 200 with the first message", async () => {
    const { chatId, token } = await direct("ana", "bruno");
    const body = { clientMsgId: randomUUID(), body: "oi" };
    const first = await sys.api<{ message: { id: string; seq: string }; created: boolean }>(
      token,
      "POST",
      `/v1/conversations/${chatId}/messages`,
      body,
    );
    const again = await sys.api<{ message: { id: string; seq: string }; created: boolean }>(
      token,
      "POST",
      `/v1/conversations/${chatId}/messages`,
      { ...body, body: "changed" },
    );
    assert.equal(first.status, 201);
    assert.equal(again.status, 200);
    assert.equal(again.json.message.id, first.json.message.id);
    assert.equal(again.json.created, false);
  });

  test("bad input is a 400 naming the field, and nothing is stored", async () => {
    const { chatId, token } = await direct("ana", "carla");
    const cases: [unknown, string][] = [
      [{ clientMsgId: "not-a-uuid", body: "x" }, "clientMsgId"],
      [{ clientMsgId: randomUUID(), body: "" }, "body"],
      [{ clientMsgId: randomUUID(), body: 7 }, "body"],
      [{ clientMsgId: randomUUID(), body: "x", extra: 1 }, "extra"],
    ];
    for (const [body, field] of cases) {
      const res = await sys.api(token, "POST", `/v1/conversations/${chatId}/messages`, body);
      assert.equal(res.status, 400, JSON.stringify(res.json));
      assert.match(JSON.stringify(res.json), new RegExp(field));
    }
    const history = await sys.api<{ messages: unknown[] }>(
      token,
      "GET",
      `/v1/conversations/${chatId}/messages?after=0`,
    );
    assert.deepEqual(history.json.messages, []);
    const notMine = await sys.api(
      await sys.token("eve"),
      "GET",
      `/v1/conversations/${chatId}/messages?after=0`,
    );
    assert.equal(notMine.status, 404);
  });

  test("CH-26 GET history newest first with a `before` cursor, ascending with `after`", async () => {
    const { chatId, token } = await direct("dora", "eli");
    for (let i = 1; i <= 5; i++) {
      await sys.api(token, "POST", `/v1/conversations/${chatId}/messages`, {
        clientMsgId: randomUUID(),
        body: `m${i}`,
      });
    }
    const newest = await sys.api<{ messages: { body: string }[]; next: string }>(
      token,
      "GET",
      `/v1/conversations/${chatId}/messages?limit=2`,
    );
    assert.deepEqual(
      newest.json.messages.map((m) => m.body),
      ["m5", "m4"],
    );
    const older = await sys.api<{ messages: { body: string }[] }>(
      token,
      "GET",
      `/v1/conversations/${chatId}/messages?limit=2&before=${newest.json.next}`,
    );
    assert.deepEqual(
      older.json.messages.map((m) => m.body),
      ["m3", "m2"],
    );
    const after3 = await sys.api<{ messages: { body: string }[] }>(
      token,
      "GET",
      `/v1/conversations/${chatId}/messages?after=3`,
    );
    assert.deepEqual(
      after3.json.messages.map((m) => m.body),
      ["m4", "m5"],
    );
  });
});

describe("gateway", () => {
  test("CH-17 CH-25 a message sent on one socket reaches every device of the recipient and the sender's other device", async () => {
    const { chatId } = await direct("fabi", "gil");
    const fabiPhone = await TestSocket.open(sys.running.url, await sys.token("fabi", "phone"));
    const fabiLaptop = await TestSocket.open(sys.running.url, await sys.token("fabi", "laptop"));
    const gilPhone = await TestSocket.open(sys.running.url, await sys.token("gil", "phone"));
    const gilTablet = await TestSocket.open(sys.running.url, await sys.token("gil", "tablet"));
    try {
      const clientMsgId = randomUUID();
      fabiPhone.send({ action: "send", ref: "r1", chatId, clientMsgId, body: "olá" });
      const sent = await fabiPhone.next((f) => f.action === "sent" && f.ref === "r1");
      const id = (sent.message as { id: string }).id;
      for (const socket of [gilPhone, gilTablet, fabiLaptop]) {
        const got = await socket.next(
          (f) => f.action === "message" && (f.message as { id: string }).id === id,
        );
        assert.equal((got.message as { body: string }).body, "olá");
      }
    } finally {
      await Promise.all([fabiPhone, fabiLaptop, gilPhone, gilTablet].map((s) => s.close()));
    }
  });

  test("CH-18 a device that was away syncs everything after its last seq, in order", async () => {
    const { chatId, token } = await direct("hana", "ivo");
    for (let i = 1; i <= 4; i++) {
      await sys.api(token, "POST", `/v1/conversations/${chatId}/messages`, {
        clientMsgId: randomUUID(),
        body: `m${i}`,
      });
    }
    const ivo = await TestSocket.open(sys.running.url, await sys.token("ivo"));
    try {
      ivo.send({ action: "sync", ref: "s", chatId, after: "1" });
      const page = await ivo.next((f) => f.action === "history" && f.ref === "s");
      assert.deepEqual(
        (page.messages as { body: string }[]).map((m) => m.body),
        ["m2", "m3", "m4"],
      );
    } finally {
      await ivo.close();
    }
  });

  test("CH-13 CH-15 bad frames get error frames naming the problem, and nothing is stored", async () => {
    const { chatId, token } = await direct("jon", "kai");
    const jon = await TestSocket.open(sys.running.url, token);
    try {
      jon.send({ action: "dance", ref: "a" });
      assert.match(
        String((await jon.next((f) => f.action === "error" && f.ref === "a")).message),
        /unknown action/,
      );
      jon.ws.send("not json");
      assert.equal(
        (await jon.next((f) => f.action === "error" && f.code === "FRAME_INVALID")).message,
        "the frame is not JSON",
      );
      jon.send({ action: "send", ref: "b", chatId, clientMsgId: randomUUID(), body: "x".repeat(40_000) });
      assert.equal(
        (await jon.next((f) => f.action === "error" && f.code === "FRAME_TOO_LARGE")).action,
        "error",
      );
      const strangers = await direct("lia", "mel");
      jon.send({ action: "send", ref: "c", chatId: strangers.chatId, clientMsgId: randomUUID(), body: "x" });
      assert.equal((await jon.next((f) => f.action === "error" && f.ref === "c")).code, "CHAT_NOT_FOUND");
      jon.send({ action: "send", ref: "d", chatId, clientMsgId: "nope", body: "x" });
      assert.equal((await jon.next((f) => f.action === "error" && f.ref === "d")).field, "clientMsgId");
      const history = await sys.api<{ messages: unknown[] }>(
        token,
        "GET",
        `/v1/conversations/${chatId}/messages?after=0`,
      );
      assert.deepEqual(history.json.messages, []);
      assert.equal(jon.closeCode, undefined, "bad frames do not close the socket");
    } finally {
      await jon.close();
    }
  });

  test("CH-13 a 100 KB message goes up as 32 KB parts and comes down as parts, whole", async () => {
    const { chatId } = await direct("nina", "otto");
    const nina = await TestSocket.open(sys.running.url, await sys.token("nina"));
    const otto = await TestSocket.open(sys.running.url, await sys.token("otto"));
    try {
      const body = "ç".repeat(50_000); // 100,000 UTF-8 bytes
      const clientMsgId = randomUUID();
      const slices = body.match(/[\s\S]{1,10000}/g)!;
      for (const [index, data] of slices.entries()) {
        nina.send({ action: "part", ref: "p", chatId, clientMsgId, index, count: slices.length, data });
      }
      const sent = await nina.next((f) => f.action === "sent" && f.ref === "p");
      const id = (sent.message as { id: string }).id;
      const parts: string[] = [];
      for (;;) {
        const part = await otto.next((f) => f.action === "message-part" && f.id === id);
        parts[part.index as number] = part.data as string;
        if (parts.filter((p) => p !== undefined).length === part.count) break;
      }
      const frame = JSON.parse(parts.join("")) as { message: { body: string } };
      assert.equal(frame.message.body, body);
      for (const f of otto.frames) assert.ok(JSON.stringify(f).length <= 32 * 1_024 + 64);
    } finally {
      await Promise.all([nina.close(), otto.close()]);
    }
  });

  test("CH-13 a flood from one connection is answered FRAME_RATE_LIMITED, then closed with 1008", async () => {
    const flood = await TestSocket.open(sys.running.url, await sys.token("pia"));
    for (let i = 0; i < 200; i++) flood.send({ action: "ping", ref: String(i) });
    await flood.next((f) => f.action === "error" && f.code === "FRAME_RATE_LIMITED");
    assert.equal(await flood.closed(), 1008);
  });

  test("CH-15 the upgrade needs a valid token: 401 before any socket exists", async () => {
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`${sys.running.url.replace(/^http/, "ws")}/v1/socket?token=forged`);
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.on("error", () => {});
    });
    assert.equal(refused, 401);
  });

  test("CH-15 a refresh frame with a new token for the same user and device is accepted; another user's is refused", async () => {
    const socket = await TestSocket.open(sys.running.url, await sys.token("quin", "phone", 60));
    try {
      socket.send({ action: "refresh", ref: "1", token: await sys.token("quin", "phone", 7_200) });
      const refreshed = await socket.next((f) => f.ref === "1");
      assert.equal(refreshed.action, "refreshed");
      socket.send({ action: "refresh", ref: "2", token: await sys.token("rui", "phone") });
      const refused = await socket.next((f) => f.ref === "2");
      assert.equal(refused.code, "FRAME_INVALID");
    } finally {
      await socket.close();
    }
  });
});

describe("big channel", () => {
  test("CH-20 a channel message is written once and delivered by 3 slice workers, each its part of the members", async () => {
    const owner = await sys.token("chan-0");
    const members = Array.from({ length: 23 }, (_, i) => `chan-${i + 1}`);
    const { json: chat } = await sys.api<{ id: string }>(owner, "POST", "/v1/conversations", {
      kind: "channel",
      title: "big",
      members,
    });
    const sockets = await Promise.all(
      ["chan-0", ...members].map(async (u) => TestSocket.open(sys.running.url, await sys.token(u))),
    );
    try {
      const before = await fanoutCounts();
      const sent = await sys.api<{ message: { id: string; seq: string } }>(
        owner,
        "POST",
        `/v1/conversations/${chat.id}/messages`,
        {
          clientMsgId: randomUUID(),
          body: "para todos",
        },
      );
      assert.equal(sent.json.message.seq, "1", "a commit offset");
      for (const s of sockets)
        await s.next(
          (f) => f.action === "message" && (f.message as { id: string }).id === sent.json.message.id,
        );
      const after = await fanoutCounts();
      const bySlice = [0, 1, 2].map((k) => (after[k] ?? 0) - (before[k] ?? 0));
      assert.equal(
        bySlice.reduce((a, b) => a + b, 0),
        24,
        "each member in exactly one slice",
      );
      assert.ok(
        bySlice.every((n) => n > 0),
        `every slice delivered a part: ${bySlice}`,
      );
    } finally {
      await Promise.all(sockets.map((s) => s.close()));
    }
  });
});

async function fanoutCounts(): Promise<Record<number, number>> {
  const text = await (await fetch(`${sys.running.url}/metrics`)).text();
  const counts: Record<number, number> = {};
  for (const match of text.matchAll(/^chat_fanout_members_total\{slice="(\d+)"\} (\d+)$/gm))
    counts[Number(match[1])] = Number(match[2]);
  return counts;
}

describe("receipts", () => {
  test("CH-11 delivered when the recipient's device acks, read when it displays: each reaches the sender's socket", async () => {
    const { chatId } = await direct("rosa", "saul");
    const rosa = await TestSocket.open(sys.running.url, await sys.token("rosa"));
    const saul = await TestSocket.open(sys.running.url, await sys.token("saul"));
    try {
      rosa.send({ action: "send", ref: "m", chatId, clientMsgId: randomUUID(), body: "chegou?" });
      const sent = await rosa.next((f) => f.action === "sent" && f.ref === "m");
      const { seq } = sent.message as { seq: string };
      await saul.next((f) => f.action === "message");
      saul.send({ action: "ack", chatId, seq });
      const delivered = await rosa.next((f) => f.action === "receipt" && f.kind === "delivered");
      assert.deepEqual([delivered.userId, delivered.upToSeq], ["saul", seq]);
      saul.send({ action: "read", chatId, seq });
      assert.equal((await rosa.next((f) => f.action === "receipt" && f.kind === "read")).upToSeq, seq);
      const history = await sys.api<{ messages: { readAt: string | null }[] }>(
        await sys.token("rosa"),
        "GET",
        `/v1/conversations/${chatId}/messages?after=0`,
      );
      assert.notEqual(history.json.messages[0]?.readAt, null, "the status is in the history");
    } finally {
      await Promise.all([rosa.close(), saul.close()]);
    }
  });
});

describe("connection lifecycle", () => {
  test("CH-12 a socket that stops answering pings is cut at the next heartbeat and leaves the gateway", async () => {
    const token = await sys.token("silent");
    const ws = new WebSocket(`${sys.running.url.replace(/^http/, "ws")}/v1/socket`, {
      headers: { authorization: `Bearer ${token}` },
      autoPong: false, // a NAT that forgot the mapping: pings go nowhere
    });
    const closed = new Promise<number>((resolve) => ws.on("close", resolve));
    await new Promise((resolve) => ws.once("message", resolve));
    const gateway = sys.running.gateway!;
    const before = gateway.connectionCount;
    await gateway.tick(); // ping sent, no pong comes
    await gateway.tick(); // still no pong: terminated
    assert.equal(await closed, 1006, "terminated, not closed politely");
    assert.equal(gateway.connectionCount, before - 1);
  });

  test("CH-13 no app frame for 10 minutes closes with 4002; the app's ping frame prevents it", async () => {
    const quiet = await TestSocket.open(sys.running.url, await sys.token("quiet"));
    const chatty = await TestSocket.open(sys.running.url, await sys.token("chatty"));
    aheadMs += 10 * 60_000;
    chatty.send({ action: "ping", ref: "hb" });
    await chatty.next((f) => f.action === "pong" && f.ref === "hb");
    await sys.running.gateway!.tick();
    assert.equal(await quiet.closed(), 4002);
    assert.equal(chatty.closeCode, undefined);
    await chatty.close();
  });

  test("CH-13 a socket alive for 2 h is closed with 4003 whatever it does: only recovered from", async () => {
    const old = await TestSocket.open(sys.running.url, await sys.token("old", "phone", 86_400));
    aheadMs += 2 * 3_600_000;
    old.send({ action: "ping", ref: "hb" });
    await old.next((f) => f.action === "pong");
    await sys.running.gateway!.tick();
    assert.equal(await old.closed(), 4003);
  });

  test("CH-15 a token that lapses without a refresh closes the socket with 4001", async () => {
    const lapsing = await TestSocket.open(sys.running.url, await sys.token("lapse", "phone", 60));
    aheadMs += 61_000;
    lapsing.send({ action: "ping", ref: "hb" });
    await lapsing.next((f) => f.action === "pong");
    await sys.running.gateway!.tick();
    assert.equal(await lapsing.closed(), 4001);
  });
});
