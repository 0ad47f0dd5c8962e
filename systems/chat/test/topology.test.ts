/**
 * The deployed shape, as OS processes on the real PostgreSQL and Redis: a send service and
 * two gateways. A sender on gateway A reaches a recipient on gateway B through the session
 * table and Redis pub/sub (CH-04); restarting the send service drops no socket (CH-27);
 * SIGTERM on a gateway closes its sockets with 4000 and its clients resume on the other
 * without losing a message written meanwhile (CH-27, CH-03); a SIGKILLed gateway leaves
 * ghost rows that a send finds "gone" and treats as offline (CH-16, CH-17).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { TestSocket } from "./system-fixture.ts";
import { type ChatProcess, deployedEnv, startChatProcess } from "./topology-fixture.ts";

const ISSUER = "issuer-token-for-the-topology-test";

test("CH-04 CH-27 CH-03 CH-17 a send service and two gateway processes: routing, backend restart, drain, crash", async (t) => {
  const dbUrl = await requirePostgres(t);
  const redisUrl = dbUrl && (await requireRedis(t));
  if (!dbUrl || !redisUrl) return;
  const world = deployedEnv({ dbUrl, redisUrl, issuer: ISSUER, name: "chat_topo" });
  const common = world.env;
  const procs: ChatProcess[] = [];
  const sockets: TestSocket[] = [];
  t.after(async () => {
    for (const s of sockets) s.ws.terminate();
    await Promise.all(procs.map((p) => p.kill()));
    await world.cleanup();
  });
  let api = await startChatProcess("api", { ...common, CHAT_ROLE: "api" });
  procs.push(api);
  const gateway = (id: string) =>
    startChatProcess(id, { ...common, CHAT_ROLE: "gateway", CHAT_API_URL: api.url, CHAT_GATEWAY_ID: id });
  const [gwA, gwB] = await Promise.all([gateway("gw-a"), gateway("gw-b")]);
  procs.push(gwA, gwB);

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
  const [ana, bruno] = [await token("ana"), await token("bruno")];
  const chatId = (await call(ana, "POST", "/v1/conversations", { kind: "direct", members: ["bruno"] }))
    .id as string;
  const open = async (url: string, tok: string) => {
    const s = await TestSocket.open(url, tok);
    sockets.push(s);
    return s;
  };
  const send = async (s: TestSocket, body: string) => {
    const ref = randomUUID();
    s.send({ action: "send", ref, chatId, clientMsgId: randomUUID(), body });
    const sent = await s.next((f) => f.ref === ref);
    assert.equal(sent.action, "sent", JSON.stringify(sent));
    return sent.message as { id: string; seq: string };
  };
  const receive = (s: TestSocket, id: string) =>
    s.next((f) => f.action === "message" && (f.message as { id: string }).id === id);

  // CH-04: Ana on gateway A, Bruno on gateway B.
  const anaSocket = await open(gwA.url, ana);
  const brunoSocket = await open(gwB.url, bruno);
  const first = await send(anaSocket, "one");
  await receive(brunoSocket, first.id);

  // CH-27: the send service restarts (a backend deploy); no socket drops.
  await api.term();
  api = await startChatProcess("api", { ...common, CHAT_ROLE: "api" }, api.port);
  procs.push(api);
  const second = await send(anaSocket, "two");
  await receive(brunoSocket, second.id);
  assert.equal(anaSocket.closeCode, undefined);
  assert.equal(brunoSocket.closeCode, undefined);

  // CH-27: gateway B is deployed: Bruno's socket closes with 4000 (reconnect with jitter).
  const termB = gwB.term();
  assert.equal(await brunoSocket.closed(), 4000);
  assert.equal(await termB, 0, "a clean exit after the drain");
  // CH-03: written while Bruno has no socket; he resumes on gateway A after his last seq.
  const third = await send(anaSocket, "three");
  const brunoAgain = await open(gwA.url, bruno);
  brunoAgain.send({ action: "sync", ref: "s", chatId, after: second.seq });
  const page = await brunoAgain.next((f) => f.action === "history" && f.ref === "s");
  assert.deepEqual(
    (page.messages as { id: string }[]).map((m) => m.id),
    [third.id],
  );

  // CH-16/CH-17: gateway A is SIGKILLed: its rows stay until their TTL; a send finds them "gone".
  await gwA.kill();
  const sentOverHttp = await call(ana, "POST", `/v1/conversations/${chatId}/messages`, {
    clientMsgId: randomUUID(),
    body: "four",
  });
  assert.equal(sentOverHttp.created, true, "accepted and stored although no gateway delivers it");
  const metrics = await (await fetch(`${api.url}/metrics`)).text();
  assert.match(metrics, /^chat_routed_total\{outcome="gone"\} [1-9]/m);
  assert.match(metrics, /^chat_routed_total\{outcome="offline"\} [1-9]/m);
});
