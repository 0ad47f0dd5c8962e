/**
 * A minimal web chat page served by the gateway (`GET /app`), running the same client
 * library as Node (src/client/) in the browser: the TypeScript files are served as
 * JavaScript with Node's own type stripping (`module.stripTypeScriptTypes`), and an import
 * map resolves `@casebook/kit/…` to the kit files the client uses — no bundler, no build
 * step. The page takes its user token and conversation from the URL fragment
 * (`/app#token=…&chat=…`), which never reaches a server log.
 *
 * @example
 * registerWebPage(service.app);   // then open http://127.0.0.1:8102/app#token=eyJ…&chat=42
 */
import { readFile } from "node:fs/promises";
import { stripTypeScriptTypes } from "node:module";
import type { FastifyInstance } from "fastify";

const FILES: Record<string, URL> = {
  "js/chat-client.ts": new URL("../client/chat-client.ts", import.meta.url),
  "js/reconnect-schedule.ts": new URL("../client/reconnect-schedule.ts", import.meta.url),
  "js/typing-state.ts": new URL("../client/typing-state.ts", import.meta.url),
  "kit/backoff": new URL(import.meta.resolve("@casebook/kit/backoff")),
  "kit/random": new URL(import.meta.resolve("@casebook/kit/random")),
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>casebook chat</title>
<style>body{font:15px system-ui;margin:2rem;max-width:40rem}li{margin:.2rem 0}#status{color:#666}</style>
<script type="importmap">{"imports":{"@casebook/kit/":"/app/kit/"}}</script></head>
<body><h1>chat <span id="status">connecting…</span></h1>
<ul id="messages"></ul>
<p id="typing"></p>
<form id="form"><input id="text" autocomplete="off" size="40"> <button id="send">send</button></form>
<script type="module">
import { ChatClient } from "/app/js/chat-client.ts";
const params = new URLSearchParams(location.hash.slice(1));
const chat = params.get("chat");
const client = new ChatClient({ url: location.origin.replace(/^http/, "ws") + "/v1/socket", token: () => params.get("token") });
const list = document.getElementById("messages");
const typing = document.getElementById("typing");
client.onMessage((m) => {
  client.markRead(m.chatId, m.seq);
  // An edit or a delete changes the message it names; it is no new line.
  const target = m.targetId ? list.querySelector('li[data-id="' + m.targetId + '"]') : null;
  if (m.kind === "edit" && target) target.textContent = m.senderId + ": " + m.body + " (edited)";
  if (m.kind === "delete" && target) target.textContent = m.senderId + ": (deleted)";
  if (m.kind === "edit" || m.kind === "delete") return;
  const li = document.createElement("li");
  li.dataset.seq = m.seq;
  li.dataset.id = m.id;
  li.textContent = m.senderId + ": " + (m.deletedAt ? "(deleted)" : m.body + (m.editedAt ? " (edited)" : ""));
  list.append(li);
  typing.textContent = client.typers(chat).join(", ") ? client.typers(chat).join(", ") + " typing…" : "";
});
client.onTyping((id, typers) => { if (id === chat) typing.textContent = typers.length ? typers.join(", ") + " typing…" : ""; });
setInterval(() => { const t = client.typers(chat); typing.textContent = t.length ? t.join(", ") + " typing…" : ""; }, 1000);
client.onState((s) => { document.getElementById("status").textContent = s; });
client.watch(chat);
client.connect();
document.getElementById("form").addEventListener("submit", (e) => {
  e.preventDefault();
  const input = document.getElementById("text");
  if (input.value) client.send(chat, input.value);
  input.value = "";
});
document.getElementById("text").addEventListener("input", () => client.typing(chat));
</script></body></html>`;

export function registerWebPage(app: FastifyInstance): void {
  const scripts = new Map<string, Promise<string>>();
  app.get(
    "/app",
    { schema: { summary: "A minimal web chat page (token and chat in the URL fragment)", tags: ["web"] } },
    async (_req, reply) => reply.type("text/html; charset=utf-8").send(PAGE),
  );
  app.get<{ Params: { dir: string; file: string } }>(
    "/app/:dir/:file",
    {
      schema: {
        summary: "The page's scripts: the client library, types stripped",
        tags: ["web"],
        hide: true,
      } as object,
    },
    async (request, reply) => {
      const key = `${request.params.dir}/${request.params.file}`;
      const source = FILES[key];
      if (!source) return reply.code(404).type("text/plain").send("not found");
      let text = scripts.get(key);
      if (!text) {
        text = readFile(source, "utf8").then((ts) => stripTypeScriptTypes(ts, { mode: "strip" }));
        scripts.set(key, text);
      }
      return reply.type("text/javascript; charset=utf-8").send(await text);
    },
  );
}
