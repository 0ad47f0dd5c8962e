/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * chat started by main() as in production: the ops routes (405 with Allow, 404), and every
 * write route — POST …/messages, PUT …/messages/{id} (an edit), POST /v1/conversations,
 * POST …/members, POST …/receipts, PUT /v1/devices/push-token, POST /v1/media (a user token)
 * and POST /v1/tokens (the issuer token) — each bad request a 4xx naming the field, nothing
 * stored. The state probe reads the group's history, its pointers, the caller's conversation
 * list (member counts) and what the API granted (`chat_grants_total` on /metrics: tokens,
 * uploads, push tokens — the writes with no list to read); the suite's positive control then
 * sees the valid write in it.
 */
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite, opsEdgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";
import { engineEnv, startSystem, type TestSystem } from "./system-fixture.ts";

/** The service's whole state so far: its build info line on /metrics. */
const BUILD_INFO = "chat_build_info";

opsEdgeContractSuite({
  name: "chat",
  open: async () => {
    const engine = await engineEnv();
    const running = await main({ PORT: "0", LOG_LEVEL: "silent", ...engine.env });
    const metrics = async () => (await running.service.app.inject({ url: "/metrics" })).body;
    return {
      subject: {
        service: running.service,
        stateProbe: async () => (await metrics()).split("\n").filter((line) => line.startsWith(BUILD_INFO)),
      },
      close: async () => {
        await running.close();
        await engine.drop();
      },
    };
  },
});

/** One system per suite: ana owns a group with bo; the probe reads what a write could change. */
async function chatWorld(): Promise<{
  system: TestSystem;
  ana: string;
  chatId: string;
  /** A message of ana's in the group: a receipt points at its seq, an edit changes it. */
  messageId: string;
  probe(): Promise<unknown>;
}> {
  const system = await startSystem();
  const ana = await system.token("ana");
  const created = await system.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "group",
    title: "edge",
    members: ["bo"],
  });
  const chatId = created.json.id;
  const first = await system.api<{ message: { id: string } }>(
    ana,
    "POST",
    `/v1/conversations/${chatId}/messages`,
    {
      clientMsgId: "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f",
      body: "first",
    },
  );
  const messageId = first.json.message.id;
  const metrics = async () => (await system.running.service.app.inject({ url: "/metrics" })).body;
  const probe = async () => ({
    history: (await system.api(ana, "GET", `/v1/conversations/${chatId}/messages?after=0`)).json,
    pointers: (await system.api(ana, "GET", `/v1/conversations/${chatId}/pointers`)).json,
    conversations: (await system.api(ana, "GET", "/v1/conversations")).json,
    grants: (await metrics()).split("\n").filter((line) => line.startsWith("chat_grants_total")),
  });
  return { system, ana, chatId, messageId, probe };
}

/** One suite per write route: the world (made in `open`), its write, the rest of its contract. */
function routeSuite(
  name: string,
  contract: Omit<Parameters<typeof edgeContractSuite>[0], "name" | "open" | "auth" | "write"> & {
    write: (world: Awaited<ReturnType<typeof chatWorld>>) => {
      method: "POST" | "PUT";
      url: string;
      body: Record<string, unknown>;
    };
    auth?: (world: Awaited<ReturnType<typeof chatWorld>>) => string;
  },
): void {
  let world: Awaited<ReturnType<typeof chatWorld>> | undefined;
  const { write, auth, ...rest } = contract;
  const writeOf = () => (world ? write(world) : { method: "POST" as const, url: "/", body: {} });
  edgeContractSuite({
    name,
    open: async () => {
      world = await chatWorld();
      const opened = world;
      return {
        subject: { service: opened.system.running.service, stateProbe: opened.probe },
        close: () => opened.system.close(),
      };
    },
    // The world is made in `open`; the write is read when the suite sends.
    write: {
      get method() {
        return writeOf().method;
      },
      get url() {
        return writeOf().url;
      },
      get body() {
        return writeOf().body;
      },
    },
    auth: {
      header: "authorization",
      valid: () => `Bearer ${world && auth ? auth(world) : world?.ana}`,
      wrong: "Bearer not.a-real.token",
    },
    ...rest,
  });
}

routeSuite("chat messages", {
  write: (w) => ({
    method: "POST",
    url: `/v1/conversations/${w.chatId}/messages`,
    body: { clientMsgId: "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", body: "hello over the edge" },
  }),
  fields: { "/clientMsgId": "string", "/body": "string" },
  stringField: "/body",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
});

routeSuite("chat conversations", {
  write: () => ({
    method: "POST",
    url: "/v1/conversations",
    body: { kind: "group", title: "new", members: ["cy"] },
  }),
  fields: { "/kind": "string", "/title": "string", "/members": "array" },
  stringField: "/title",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
});

routeSuite("chat message edits", {
  write: (w) => ({
    method: "PUT",
    url: `/v1/conversations/${w.chatId}/messages/${w.messageId}`,
    body: { clientMsgId: "7a2b3c4d-5e6f-4a1b-9c8d-7e6f5a4b3c2d", body: "edited over the edge" },
  }),
  fields: { "/clientMsgId": "string", "/body": "string" },
  stringField: "/body",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "POST", allow: "DELETE, PUT" },
});

routeSuite("chat members", {
  write: (w) => ({ method: "POST", url: `/v1/conversations/${w.chatId}/members`, body: { members: ["cy"] } }),
  fields: { "/members": "array" },
  stringField: "/members/0",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "POST" },
});

routeSuite("chat receipts", {
  write: (w) => ({
    method: "POST",
    url: `/v1/conversations/${w.chatId}/receipts`,
    body: { kind: "read", seq: "1" },
  }),
  fields: { "/kind": "string", "/seq": "string" },
  stringField: "/seq",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "POST" },
});

routeSuite("chat push tokens", {
  write: () => ({
    method: "PUT",
    url: "/v1/devices/push-token",
    body: { platform: "fcm", token: "fcm-token-of-the-edge" },
  }),
  fields: { "/platform": "string", "/token": "string" },
  stringField: "/token",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "POST", allow: "PUT" },
});

routeSuite("chat media uploads", {
  write: () => ({ method: "POST", url: "/v1/media", body: { contentType: "image/png", bytes: 2_048 } }),
  fields: { "/contentType": "string", "/bytes": "integer" },
  stringField: "/contentType",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "POST" },
});

routeSuite("chat user tokens", {
  write: () => ({ method: "POST", url: "/v1/tokens", body: { userId: "eve", deviceId: "phone" } }),
  auth: (w) => w.system.running.issuerToken,
  fields: { "/userId": "string", "/deviceId": "string", "/ttlS": "integer" },
  stringField: "/userId",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "POST" },
});
