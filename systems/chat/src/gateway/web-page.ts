/**
 * A minimal web chat page served by the gateway (`GET /app`), running the same client
 * library as Node (src/client/) in the browser: the TypeScript files are served as
 * JavaScript with Node's own type stripping (`module.stripTypeScriptTypes`), and an import
 * map resolves `@casebook/kit/…` to the kit files the client uses — no bundler, no build
 * step. The page takes its user token and conversation from the URL fragment
 * (`/app#token=…&chat=…`), which never reaches a server log. It lists the user's
 * conversations with their unread counts, who of the members is online (pushed), offers edit
 * and delete on the user's own messages, and keeps what it showed and its cursor in the tab's sessionStorage, so a
 * reload resumes after the cursor instead of fetching the history from the start.
 *
 * @example
 * registerWebPage(service.app);   // then open http://127.0.0.1:8102/app#token=eyJ…&chat=42
 */
import { readFile } from "node:fs/promises";
import { stripTypeScriptTypes } from "node:module";
import type { FastifyInstance } from "fastify";

const FILES: Record<string, URL> = {
  "js/chat-client.ts": new URL("../client/chat-client.ts", import.meta.url),
  // The client shares the domain's rules (the caption bound): /app/domain/media.ts from /app/js/.
  "domain/media.ts": new URL("../domain/media.ts", import.meta.url),
  "js/media-upload.ts": new URL("../client/media-upload.ts", import.meta.url),
  "js/reconnect-schedule.ts": new URL("../client/reconnect-schedule.ts", import.meta.url),
  "js/typing-state.ts": new URL("../client/typing-state.ts", import.meta.url),
  "kit/backoff": new URL(import.meta.resolve("@casebook/kit/backoff")),
  "kit/random": new URL(import.meta.resolve("@casebook/kit/random")),
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>casebook chat</title>
<style>body{font:15px system-ui;margin:2rem;max-width:40rem}li{margin:.2rem 0}#status{color:#666}
#messages button{font-size:12px;margin-left:.4rem}#conversations .unread{font-weight:bold}</style>
<script type="importmap">{"imports":{"@casebook/kit/":"/app/kit/"}}</script></head>
<body><h1>chat <span id="status">connecting…</span></h1>
<nav aria-label="conversations"><ul id="conversations"></ul></nav>
<ul id="messages"></ul>
<p id="typing"></p>
<p id="online" data-online=""></p>
<form id="form"><label for="text">message</label> <input id="text" autocomplete="off" size="40"> <button id="send">send</button></form>
<script type="module">
import { ChatClient } from "/app/js/chat-client.ts";
const params = new URLSearchParams(location.hash.slice(1));
const chat = params.get("chat");
const token = params.get("token");
const me = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
// What this tab has shown, kept across a reload (sessionStorage: this tab only, gone with it):
// the lines, and the cursor the sync resumes after, so a reload fetches only what is new.
const MAX_KEPT_LINES = 500;
const storeKey = "casebook-chat:" + chat + ":" + me;
let kept = { cursor: "0", lines: [] };
try { kept = JSON.parse(sessionStorage.getItem(storeKey)) ?? kept; } catch {}
const save = () => {
  kept.lines = kept.lines.slice(-MAX_KEPT_LINES);
  try { sessionStorage.setItem(storeKey, JSON.stringify(kept)); } catch {}
};
document.body.dataset.resumedFrom = kept.cursor;
const client = new ChatClient({ url: location.origin.replace(/^http/, "ws") + "/v1/socket", token: () => token });
const list = document.getElementById("messages");
const typing = document.getElementById("typing");
const input = document.getElementById("text");
let editing = null;
const textOf = (line) => line.senderId + ": " + (line.deleted ? "(deleted)" : line.body + (line.edited ? " (edited)" : ""));
function render(line) {
  let li = list.querySelector('li[data-id="' + line.id + '"]');
  if (!li) {
    li = document.createElement("li");
    li.dataset.id = line.id;
    li.dataset.seq = line.seq;
    const span = document.createElement("span");
    span.className = "text";
    li.append(span);
    list.append(li);
  }
  li.querySelector(".text").textContent = textOf(line);
  for (const b of li.querySelectorAll("button")) b.remove();
  // Edit and delete on one's own messages only (the server checks it too: 403 otherwise).
  if (line.senderId !== me || line.deleted) return;
  const edit = document.createElement("button");
  edit.type = "button";
  edit.className = "edit";
  edit.textContent = "edit";
  edit.addEventListener("click", () => { editing = line.id; input.value = line.body; input.focus(); document.getElementById("send").textContent = "save"; });
  const del = document.createElement("button");
  del.type = "button";
  del.className = "delete";
  del.textContent = "delete";
  del.addEventListener("click", () => client.delete(chat, line.id));
  li.append(edit, del);
}
for (const line of kept.lines) render(line);
client.onMessage((m) => {
  if (m.chatId !== chat) { void refreshList(); return; }
  client.markRead(m.chatId, m.seq);
  kept.cursor = client.cursor(chat);
  // An edit or a delete changes the message it names; it is no new line.
  if (m.kind === "edit" || m.kind === "delete") {
    const line = kept.lines.find((l) => l.id === m.targetId);
    if (line && m.kind === "edit") Object.assign(line, { body: m.body, edited: true });
    if (line && m.kind === "delete") Object.assign(line, { body: "", deleted: true });
    if (line) render(line);
    save();
    return;
  }
  const line = { id: m.id, seq: m.seq, senderId: m.senderId, body: m.body, edited: Boolean(m.editedAt), deleted: Boolean(m.deletedAt) };
  kept.lines.push(line);
  render(line);
  save();
  const t = client.typers(chat);
  typing.textContent = t.length ? t.join(", ") + " typing…" : "";
});
// The conversation list, the most recent first, each with its unread count (from the read pointers).
const convList = document.getElementById("conversations");
let listing = false;
async function refreshList() {
  if (listing || !client.connected) return;
  listing = true;
  try {
    const conversations = await client.conversations();
    convList.replaceChildren(...conversations.map((c) => {
      const li = document.createElement("li");
      li.dataset.chat = c.id;
      li.dataset.unread = String(c.unread);
      const a = document.createElement("a");
      a.href = "#token=" + encodeURIComponent(token) + "&chat=" + c.id;
      a.textContent = (c.title ?? c.kind) + (c.id === chat ? " (open)" : "");
      li.append(a);
      if (c.unread > 0 && c.id !== chat) {
        const n = document.createElement("span");
        n.className = "unread";
        n.textContent = " " + c.unread + (c.unread >= 999 ? "+" : "") + " unread";
        li.append(n);
      }
      return li;
    }));
  } catch {} finally { listing = false; }
}
window.addEventListener("hashchange", () => location.reload());
setInterval(refreshList, 3000);
client.onTyping((id, typers) => { if (id === chat) typing.textContent = typers.length ? typers.join(", ") + " typing…" : ""; });
setInterval(() => { const t = client.typers(chat); typing.textContent = t.length ? t.join(", ") + " typing…" : ""; }, 1000);
// Who of the members is online, pushed as they connect and disconnect (the gateway's presence watch).
const online = new Map();
const onlineLine = document.getElementById("online");
client.onPresence((users) => {
  for (const u of users) online.set(u.userId, u.online);
  const who = [...online].filter(([, on]) => on).map(([id]) => id).sort();
  onlineLine.textContent = who.length ? "online: " + who.join(", ") : "";
  onlineLine.dataset.online = who.join(",");
});
void client.watchPresence(chat);
client.onState((s) => { document.getElementById("status").textContent = s; if (s === "open") void refreshList(); });
client.watch(chat, kept.cursor);
client.connect();
document.getElementById("form").addEventListener("submit", (e) => {
  e.preventDefault();
  if (input.value && editing) client.edit(chat, editing, input.value);
  else if (input.value) client.send(chat, input.value);
  editing = null;
  document.getElementById("send").textContent = "send";
  input.value = "";
});
input.addEventListener("input", () => client.typing(chat));
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
