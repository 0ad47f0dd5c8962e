/**
 * Edit, delete and unread counts through chat's public surfaces (started by main()): the
 * HTTP routes (201/200, and 403/404/409 naming `messageId`), the events delivered live to
 * members' sockets and found again by a device resuming after its cursor (CH-05), and the
 * client library's edit/delete (through its outbox) and conversation list with unread counts.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { ChatClient, type ClientMessage } from "../src/client/chat-client.ts";
import { startSystem, TestSocket, type TestSystem, until } from "./system-fixture.ts";

let sys: TestSystem;
before(async () => {
  sys = await startSystem();
});
after(async () => {
  await sys?.close();
});

interface Sent {
  message: { id: string; seq: string; kind: string; targetId: string | null; body: string };
  created: boolean;
}

async function group(owner: string, others: string[]) {
  const token = await sys.token(owner);
  const { json } = await sys.api<{ id: string }>(token, "POST", "/v1/conversations", {
    kind: "group",
    title: "g",
    members: others,
  });
  return { chatId: json.id, token };
}

test("CH-05 CH-09 edit and delete over HTTP: events delivered live, seen again after the cursor, idempotent, sender only", async () => {
  const { chatId, token: ana } = await group("ana", ["bruno"]);
  const bruno = await sys.token("bruno");
  const socket = await TestSocket.open(sys.running.url, bruno);
  try {
    const messages = `/v1/conversations/${chatId}/messages`;
    const typed = await sys.api<Sent>(ana, "POST", messages, { clientMsgId: randomUUID(), body: "helo" });
    const id = typed.json.message.id;
    const editBody = { clientMsgId: randomUUID(), body: "hello" };
    const edit = await sys.api<Sent>(ana, "PUT", `${messages}/${id}`, editBody);
    assert.equal(edit.status, 201, JSON.stringify(edit.json));
    assert.equal(edit.json.message.kind, "edit");
    assert.equal(edit.json.message.targetId, id);
    const resent = await sys.api<Sent>(ana, "PUT", `${messages}/${id}`, editBody);
    assert.equal(resent.status, 200);
    assert.equal(resent.json.message.id, edit.json.message.id);

    const notSender = await sys.api<{ code: string; field: string }>(bruno, "DELETE", `${messages}/${id}`);
    assert.equal(notSender.status, 403);
    assert.equal(notSender.json.code, "CHAT_MESSAGE_NOT_SENDER");
    assert.equal(notSender.json.field, "messageId");
    const missing = await sys.api<{ code: string }>(ana, "DELETE", `${messages}/9000000000000000001`);
    assert.equal(missing.status, 404);
    assert.equal(missing.json.code, "CHAT_MESSAGE_NOT_FOUND");
    const badId = await sys.api(ana, "DELETE", `${messages}/x1`);
    assert.equal(badId.status, 400);
    assert.match(JSON.stringify(badId.json), /messageId/);

    const deleted = await sys.api<Sent>(ana, "DELETE", `${messages}/${id}`);
    assert.equal(deleted.status, 201);
    const again = await sys.api<Sent>(ana, "DELETE", `${messages}/${id}`);
    assert.equal(again.status, 200, "deleting twice is one delete");
    assert.equal(again.json.message.id, deleted.json.message.id);
    const tombstoneEdit = await sys.api<{ code: string }>(ana, "PUT", `${messages}/${id}`, {
      clientMsgId: randomUUID(),
      body: "back",
    });
    assert.equal(tombstoneEdit.status, 409);
    assert.equal(tombstoneEdit.json.code, "CHAT_MESSAGE_DELETED");

    // Live: Bruno's socket got the message, the edit and the delete, in seq order (the resent
    // edit and delete are routed again: at-least-once, CH-10; the client dedupes by id).
    await socket.next((f) => f.action === "message" && (f.message as Sent["message"]).kind === "delete");
    const live = new Map<string, Sent["message"]>();
    for (const f of socket.frames)
      if (f.action === "message") live.set((f.message as Sent["message"]).id, f.message as Sent["message"]);
    assert.deepEqual(
      [...live.values()].map((m) => m.kind),
      ["text", "edit", "delete"],
    );
    // Resuming after the first message: the edit and the delete, in order; the message itself a tombstone.
    const page = await sys.api<{ messages: (Sent["message"] & { deletedAt: string | null })[] }>(
      bruno,
      "GET",
      `${messages}?after=0`,
    );
    assert.deepEqual(
      page.json.messages.map((m) => [m.kind, m.body]),
      [
        ["text", ""],
        ["edit", ""],
        ["delete", ""],
      ],
    );
    assert.ok(page.json.messages[0]!.deletedAt);
  } finally {
    socket.ws.terminate();
  }
});

test("CH-25 the client library: edit and delete through its outbox, events in order, unread counts from the read pointers", async () => {
  const { chatId } = await group("carla", ["davi"]);
  const url = `${sys.running.url.replace(/^http/, "ws")}/v1/socket`;
  const make = (userId: string) => new ChatClient({ url, token: () => sys.token(userId), autoAck: true });
  const writer = make("carla");
  const reader = make("davi");
  const shown: ClientMessage[] = [];
  reader.onMessage((m) => shown.push(m));
  reader.watch(chatId);
  try {
    writer.connect();
    reader.connect();
    await until(() => writer.connected && reader.connected, "both connected");
    const first = await writer.send(chatId, "one");
    await writer.send(chatId, "two");
    await writer.send(chatId, "three");
    const edited = await writer.edit(chatId, first.id, "one!");
    assert.equal(edited.kind, "edit");
    const deleted = await writer.delete(chatId, first.id);
    assert.equal(deleted.kind, "delete");
    assert.equal((await writer.delete(chatId, first.id)).id, deleted.id, "a second delete answers the first");
    await until(() => shown.length === 5, "davi shows 3 messages and 2 events");
    assert.deepEqual(
      shown.map((m) => [m.kind, m.targetId ?? null]),
      [
        ["text", null],
        ["text", null],
        ["text", null],
        ["edit", first.id],
        ["delete", first.id],
      ],
    );
    const unread = async () => (await reader.conversations()).find((c) => c.id === chatId)?.unread;
    assert.equal(await unread(), 2, "two, three: the deleted one is not unread; delivered is not read");
    reader.markRead(chatId, shown[1]!.seq);
    // The read frame has no answer: ask until the pointer moved (bounded by the test's timeout).
    while ((await unread()) !== 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const mine = (await writer.conversations()).find((c) => c.id === chatId);
    assert.equal(mine?.unread, 0, "your own messages are never unread");
  } finally {
    writer.close();
    reader.close();
  }
});
