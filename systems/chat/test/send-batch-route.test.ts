/**
 * The gateways' batched send (`POST /v1/message-batches`, src/api/send-batch-routes.ts) and
 * the gateway's side of it (BackendClient's batches): each item is the single route's send
 * with its own token and its own result, a refusal fails no neighbour, and a connection's
 * sends keep their order.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, test } from "node:test";
import { BackendClient } from "../src/gateway/backend-client.ts";
import { startSystem, type TestSystem } from "./system-fixture.ts";

let sys: TestSystem;
before(async () => {
  sys = await startSystem();
});
after(async () => {
  await sys?.close();
});

async function group(owner: string, members: string[]) {
  const token = await sys.token(owner);
  const { status, json } = await sys.api<{ id: string }>(token, "POST", "/v1/conversations", {
    kind: "group",
    members,
  });
  assert.equal(status, 201, JSON.stringify(json));
  return { chatId: json.id, token };
}

async function postBatch(items: unknown[]) {
  const res = await fetch(`${sys.running.url}/v1/message-batches`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ items }),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

test("CH-09 CH-15 one batch, each item its own result: stored 201, a resend 200 with the first message, a bad token 401, a conversation you are not in 404 — no neighbour fails", async () => {
  const { chatId, token } = await group("bia", ["caio"]);
  const other = await group("duda", ["enzo"]);
  const first = randomUUID();
  const stored = await postBatch([{ token, chatId, clientMsgId: first, body: "um" }]);
  assert.equal(stored.status, 200);
  const [one] = stored.json.results as { status: number; message: { id: string; seq: string } }[];
  assert.equal(one!.status, 201);
  const { status, json } = await postBatch([
    { token, chatId, clientMsgId: randomUUID(), body: "dois" },
    { token, chatId, clientMsgId: first, body: "um de novo" },
    { token: `${token}x`, chatId, clientMsgId: randomUUID(), body: "forjado" },
    { token, chatId: other.chatId, clientMsgId: randomUUID(), body: "não sou membro" },
    { token, chatId, clientMsgId: randomUUID(), body: "três" },
  ]);
  assert.equal(status, 200);
  const results = json.results as {
    status: number;
    code?: string;
    field?: string;
    message?: { id: string; seq: string; body: string };
    created?: boolean;
  }[];
  assert.deepEqual(
    results.map((r) => r.status),
    [201, 200, 401, 404, 201],
  );
  assert.equal(results[1]!.message!.id, one!.message.id, "the resend returns the first message");
  assert.equal(results[1]!.created, false);
  assert.deepEqual([results[2]!.code, results[2]!.field], ["AUTH_INVALID", "token"]);
  assert.equal(results[3]!.code, "CHAT_NOT_FOUND");
  assert.deepEqual(
    [results[0]!.message!.seq, results[4]!.message!.seq],
    ["2", "3"],
    "stored in item order, no seq taken by the refused",
  );
  const history = await sys.api<{ messages: { body: string }[] }>(
    token,
    "GET",
    `/v1/conversations/${chatId}/messages?after=0`,
  );
  assert.deepEqual(
    history.json.messages.map((m) => m.body),
    ["um", "dois", "três"],
  );
});

test("CH-13 a malformed batch is a 400 naming the field (the strict edge: a NUL in a body fails the call); more than 32 items is refused", async () => {
  const empty = await postBatch([]);
  assert.equal(empty.status, 400);
  assert.match(JSON.stringify(empty.json), /items/);
  const { chatId, token } = await group("fabi", ["gil"]);
  const item = () => ({ token, chatId, clientMsgId: randomUUID(), body: "x" });
  const tooMany = await postBatch(Array.from({ length: 33 }, item));
  assert.equal(tooMany.status, 400);
  const unknown = await postBatch([{ ...item(), extra: 1 }]);
  assert.equal(unknown.status, 400);
  assert.match(JSON.stringify(unknown.json), /extra/);
  const nul = await postBatch([{ ...item(), body: "\u0000" }]);
  assert.equal(nul.status, 400);
});

test("CH-06 CH-13 a gateway's concurrent sends go in batches, each with its own result, in the order they were sent", async () => {
  const { chatId, token } = await group("hana", ["ivo"]);
  const backend = new BackendClient({ baseUrl: sys.running.url });
  try {
    const sends = Array.from({ length: 40 }, (_, i) =>
      backend.send(token, { chatId, clientMsgId: randomUUID(), body: `m${i}` }),
    );
    // The refusal's handler is attached now: it may settle before the sends' Promise.all resumes.
    const forged = assert.rejects(
      backend.send(`${token}x`, { chatId, clientMsgId: randomUUID(), body: "forjado" }),
      (err: { code?: string; status?: number }) => err.code === "AUTH_INVALID",
    );
    const sent = await Promise.all(sends);
    await forged;
    assert.deepEqual(
      sent.map((s) => s.message.seq),
      Array.from({ length: 40 }, (_, i) => String(i + 1)),
      "each send's own message, seqs in the order sent",
    );
    assert.ok(sent.every((s) => s.created));
    // A body past the batched size goes the single route, stored all the same.
    const long = await backend.send(token, { chatId, clientMsgId: randomUUID(), body: "y".repeat(5_000) });
    assert.equal(long.message.seq, "41");
  } finally {
    backend.close();
  }
});
