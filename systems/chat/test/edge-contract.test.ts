/**
 * The edge contract every HTTP service passes (packages/lab/src/edge-contract-suite.ts), on
 * chat started by main() as in production: the ops routes (405 with Allow, 404), and the
 * write routes a user token reaches — POST …/messages (a message into a group) and POST
 * /v1/conversations (a new group) — each bad request a 4xx naming the field, nothing stored.
 * The state probe reads the group's history and the caller's conversation list through the
 * API; the suite's positive control then sees the valid write in it.
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
  const probe = async () => ({
    history: (await system.api(ana, "GET", `/v1/conversations/${chatId}/messages?after=0`)).json,
    conversations: (await system.api(ana, "GET", "/v1/conversations")).json,
  });
  return { system, ana, chatId, probe };
}

let messages: Awaited<ReturnType<typeof chatWorld>> | undefined;

edgeContractSuite({
  name: "chat messages",
  open: async () => {
    messages = await chatWorld();
    const world = messages;
    return {
      subject: { service: world.system.running.service, stateProbe: world.probe },
      close: () => world.system.close(),
    };
  },
  write: {
    method: "POST",
    // The group is made in `open`; its id is read when the suite sends (see `url` below).
    get url() {
      return `/v1/conversations/${messages?.chatId ?? "0"}/messages`;
    },
    body: { clientMsgId: "6f1c2a7e-3b4d-4e5f-8a9b-0c1d2e3f4a5b", body: "hello over the edge" },
  },
  fields: { "/clientMsgId": "string", "/body": "string" },
  stringField: "/body",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
  auth: { header: "authorization", valid: () => `Bearer ${messages?.ana}`, wrong: "Bearer not.a-real.token" },
});

let groups: Awaited<ReturnType<typeof chatWorld>> | undefined;

edgeContractSuite({
  name: "chat conversations",
  open: async () => {
    groups = await chatWorld();
    const world = groups;
    return {
      subject: { service: world.system.running.service, stateProbe: world.probe },
      close: () => world.system.close(),
    };
  },
  write: { method: "POST", url: "/v1/conversations", body: { kind: "group", title: "new", members: ["cy"] } },
  fields: { "/kind": "string", "/title": "string", "/members": "array" },
  stringField: "/title",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "PUT", allow: "GET, HEAD, POST" },
  auth: { header: "authorization", valid: () => `Bearer ${groups?.ana}`, wrong: "Bearer not.a-real.token" },
});

let edits: (Awaited<ReturnType<typeof chatWorld>> & { messageId: string }) | undefined;

edgeContractSuite({
  name: "chat message edits",
  open: async () => {
    const world = await chatWorld();
    const sent = await world.system.api<{ message: { id: string } }>(
      world.ana,
      "POST",
      `/v1/conversations/${world.chatId}/messages`,
      { clientMsgId: "0b5a3c1d-2e4f-4a6b-8c7d-9e0f1a2b3c4d", body: "to be edited" },
    );
    edits = { ...world, messageId: sent.json.message.id };
    return {
      subject: { service: world.system.running.service, stateProbe: world.probe },
      close: () => world.system.close(),
    };
  },
  write: {
    method: "PUT",
    // The message is sent in `open`; its id is read when the suite sends.
    get url() {
      return `/v1/conversations/${edits?.chatId ?? "0"}/messages/${edits?.messageId ?? "0"}`;
    },
    body: { clientMsgId: "7a2b3c4d-5e6f-4a1b-9c8d-7e6f5a4b3c2d", body: "edited over the edge" },
  },
  fields: { "/clientMsgId": "string", "/body": "string" },
  stringField: "/body",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "POST", allow: "DELETE, PUT" },
  auth: { header: "authorization", valid: () => `Bearer ${edits?.ana}`, wrong: "Bearer not.a-real.token" },
});
