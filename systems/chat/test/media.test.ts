/**
 * Media by reference (CH-24) against chat started by main(): an upload authorized by the API,
 * its bytes PUT straight to the object store's pre-signed URL (a local directory), a message
 * carrying only the reference, a member downloading the same bytes — and every way the URL
 * and the reference are guarded: the signed type and size, tampering, expiry, first write
 * wins, a cut upload leaving nothing, media the sender may not see, a deleted message taking
 * the reference away, the per-user bound on pending uploads.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { MediaUrls } from "../src/api/media-urls.ts";
import { ChatClient, type ClientMessage, downloadMedia, uploadMedia } from "../src/client/chat-client.ts";
import { MAX_PENDING_UPLOADS, UPLOAD_URL_TTL_MS } from "../src/domain/media.ts";
import { ObjectDirectory } from "../src/store/object-directory.ts";
import { authorizeMedia, bytesOf, putObject, sendMessage } from "./media-fixture.ts";
import { startSystem, type TestSystem, until } from "./system-fixture.ts";

const MAX_BYTES = 64 * 1_024;
let sys: TestSystem;
let mediaDir: string;
let ana: string;
let bruno: string;
let carol: string;
let chatId: string;

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

before(async () => {
  mediaDir = await mkdtemp(join(tmpdir(), "casebook-chat-media-"));
  sys = await startSystem({ CHAT_MEDIA_DIR: mediaDir, CHAT_MEDIA_MAX_BYTES: String(MAX_BYTES) });
  [ana, bruno, carol] = await Promise.all([sys.token("ana"), sys.token("bruno"), sys.token("carol")]);
  const made = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "group",
    title: "photos",
    members: ["bruno"],
  });
  assert.equal(made.status, 201);
  chatId = made.json.id;
});
after(async () => {
  await sys?.close();
  await rm(mediaDir, { recursive: true, force: true });
});

const authorize = (token: string, contentType: string, bytes: number) =>
  authorizeMedia(sys, token, contentType, bytes);
const put = putObject;

/** A PUT with Transfer-Encoding: chunked (no Content-Length), as a streaming client sends. */
function putChunked(
  url: string,
  body: Uint8Array,
  contentType: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(url), { method: "PUT", headers: { "content-type": contentType } }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        text += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on("error", reject);
    req.write(body.subarray(0, 500));
    req.end(body.subarray(500));
  });
}

/** A message into `chat` (the group by default), with media when `mediaId` is given. */
const send = (token: string, body: string, mediaId?: string, chat = chatId) =>
  sendMessage(sys, token, chat, body, mediaId);

test("CH-24 media by reference: bytes PUT to a pre-signed URL, the message carries only the reference, a member downloads the same bytes", async () => {
  const data = bytesOf(20_000);
  const grant = await authorize(ana, "image/png", data.byteLength);
  assert.equal(grant.status, 201);
  assert.equal(grant.json.media.status, "pending");
  assert.equal(grant.json.upload.method, "PUT");
  assert.deepEqual(grant.json.upload.headers, { "content-type": "image/png", "content-length": "20000" });
  const stored = await put(grant.json.upload.url, data, { "content-type": "image/png" });
  assert.equal(stored.status, 200);
  assert.equal(stored.headers.get("etag"), `"${sha256(data)}"`);
  assert.deepEqual(await stored.json(), {
    key: grant.json.media.id,
    bytes: 20_000,
    sha256: sha256(data),
    created: true,
  });

  const sent = await send(ana, "", grant.json.media.id);
  assert.equal(sent.status, 201);
  const ref = { id: grant.json.media.id, contentType: "image/png", bytes: 20_000, sha256: sha256(data) };
  assert.deepEqual(sent.json.message.media, ref);
  assert.equal(sent.json.message.body, "", "the caption may be empty");

  // The recipient's history holds the reference, and the reference gives the bytes.
  const page = await sys.api<{ messages: ClientMessage[] }>(
    bruno,
    "GET",
    `/v1/conversations/${chatId}/messages?after=0`,
  );
  assert.deepEqual(page.json.messages.at(-1)?.media, ref);
  const got = await sys.api<{ media: { sha256: string; status: string }; download: { url: string } }>(
    bruno,
    "GET",
    `/v1/media/${ref.id}`,
  );
  assert.equal(got.status, 200);
  assert.equal(got.json.media.status, "stored");
  const res = await fetch(got.json.download.url);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "image/png");
  assert.equal(res.headers.get("x-content-type-options"), "nosniff");
  assert.deepEqual(new Uint8Array(await res.arrayBuffer()), data);

  // Someone in no conversation that carries it cannot even learn it exists.
  const outsider = await sys.api<{ code: string }>(carol, "GET", `/v1/media/${ref.id}`);
  assert.equal(outsider.status, 404);
  assert.equal(outsider.json.code, "CHAT_MEDIA_NOT_FOUND");
});

test("CH-24 the client library: uploadMedia, sendMedia over the socket, the member's device shows the reference, downloadMedia checks the digest", async () => {
  const url = `${sys.running.url.replace(/^http/, "ws")}/v1/socket`;
  const sender = new ChatClient({ url, token: () => sys.token("ana", "laptop") });
  const receiver = new ChatClient({ url, token: () => sys.token("bruno", "laptop") });
  const shown: ClientMessage[] = [];
  receiver.onMessage((m) => shown.push(m));
  receiver.watch(chatId);
  sender.connect();
  receiver.connect();
  try {
    const data = bytesOf(3_000, 11);
    const uploaded = await uploadMedia({
      apiUrl: sys.running.url,
      token: ana,
      contentType: "video/mp4",
      data,
    });
    assert.equal(uploaded.sha256, sha256(data));
    const message = await sender.sendMedia(chatId, uploaded.id, "our trip");
    assert.deepEqual(message.media, {
      id: uploaded.id,
      contentType: "video/mp4",
      bytes: 3_000,
      sha256: sha256(data),
    });
    await until(() => shown.some((m) => m.id === message.id), "bruno's device shows the media message");
    const seen = shown.find((m) => m.id === message.id)!;
    assert.equal(seen.body, "our trip");
    assert.deepEqual(seen.media, message.media);
    const bytes = await downloadMedia({ apiUrl: sys.running.url, token: bruno, mediaId: uploaded.id });
    assert.deepEqual(bytes, data);
  } finally {
    sender.close();
    receiver.close();
  }
});

test("CH-24 a pre-signed URL admits exactly what it was signed for; an object is written once", async () => {
  const data = bytesOf(1_000, 3);
  const { json } = await authorize(ana, "image/jpeg", data.byteLength);
  const url = json.upload.url;
  const refused = async (res: Response, status: number, code: string) => {
    assert.equal(res.status, status, code);
    assert.equal(((await res.json()) as { code: string }).code, code);
  };
  await refused(await put(url, data, { "content-type": "image/png" }), 400, "OBJECT_CONTENT_TYPE_MISMATCH");
  await refused(await put(url, bytesOf(999), { "content-type": "image/jpeg" }), 400, "OBJECT_SIZE_MISMATCH");
  await refused(
    await put(url, bytesOf(1_001), { "content-type": "image/jpeg" }),
    400,
    "OBJECT_SIZE_MISMATCH",
  );
  // Without Content-Length (chunked), the store counts: a short body is refused at its end, a long one at its first extra byte.
  for (const size of [999, 1_001]) {
    const chunked = await putChunked(url, bytesOf(size), "image/jpeg");
    assert.equal(chunked.status, 400, `chunked, ${size} bytes`);
    assert.equal(JSON.parse(chunked.body).code, "OBJECT_SIZE_MISMATCH");
  }
  const early = await send(ana, "not yet", json.media.id);
  assert.equal(early.status, 409, "nothing was stored by the refused uploads");
  const tampered = url.replace(
    /sig=([^.]+)\.([^.]+)\.(.)/,
    (_m, kid, payload, c) => `sig=${kid}.${payload}.${c === "A" ? "B" : "A"}`,
  );
  await refused(await put(tampered, data, { "content-type": "image/jpeg" }), 403, "OBJECT_SIGNATURE_INVALID");
  // The URL names one key: another key with the same signature is refused.
  const other = await authorize(ana, "image/jpeg", data.byteLength);
  const swapped = url.replace(`/v1/objects/${json.media.id}?`, `/v1/objects/${other.json.media.id}?`);
  await refused(await put(swapped, data, { "content-type": "image/jpeg" }), 403, "OBJECT_SIGNATURE_INVALID");
  // A download URL is not an upload URL.
  assert.equal((await put(url, data, { "content-type": "image/jpeg" })).status, 200);
  const sent = await send(ana, "a jpeg", json.media.id);
  assert.equal(sent.status, 201);
  const download = await sys.api<{ download: { url: string } }>(ana, "GET", `/v1/media/${json.media.id}`);
  await refused(
    await put(download.json.download.url, data, { "content-type": "image/jpeg" }),
    403,
    "OBJECT_SIGNATURE_INVALID",
  );
  // The same bytes again: fine, nothing changes; other bytes under the key: refused.
  const again = await put(url, data, { "content-type": "image/jpeg" });
  assert.equal(again.status, 200);
  assert.equal(((await again.json()) as { created: boolean }).created, false);
  await refused(await put(url, bytesOf(1_000, 99), { "content-type": "image/jpeg" }), 409, "OBJECT_EXISTS");
  const res = await fetch(download.json.download.url);
  assert.deepEqual(new Uint8Array(await res.arrayBuffer()), data, "the first bytes stay");
});

test("CH-24 an expired URL is refused by name; the signature binds key, method, type and size", () => {
  const clock = new ManualClock(1_000_000);
  const urls = new MediaUrls({ secret: new Uint8Array(32).fill(9), clock });
  const upload = urls.upload("http://x", "42", "image/png", 10);
  const sig = new URL(upload.url).searchParams.get("sig")!;
  assert.deepEqual(urls.verify(sig, "42", "PUT"), { contentType: "image/png", bytes: 10 });
  assert.throws(() => urls.verify(sig, "42", "GET"), { code: "OBJECT_SIGNATURE_INVALID" });
  assert.throws(() => urls.verify(sig, "43", "PUT"), { code: "OBJECT_SIGNATURE_INVALID" });
  clock.advance(UPLOAD_URL_TTL_MS);
  assert.throws(() => urls.verify(sig, "42", "PUT"), { code: "OBJECT_URL_EXPIRED" });
  const foreign = new MediaUrls({ secret: new Uint8Array(32).fill(8), clock });
  assert.throws(
    () => foreign.verify(urls.upload("http://x", "42", "image/png", 10).url.split("sig=")[1]!, "42", "PUT"),
    {
      code: "OBJECT_SIGNATURE_INVALID",
    },
  );
});

test("CH-24 an upload cut short leaves nothing under its key; the retry stores it", async () => {
  const data = bytesOf(50_000, 5);
  const { json } = await authorize(ana, "application/pdf", data.byteLength);
  const url = new URL(json.upload.url);
  await new Promise<void>((resolve) => {
    const req = request(url, {
      method: "PUT",
      headers: { "content-type": "application/pdf", "content-length": String(data.byteLength) },
    });
    req.on("error", () => resolve());
    req.write(data.subarray(0, 20_000), () =>
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 100),
    );
  });
  const early = await send(ana, "the report", json.media.id);
  assert.equal(early.status, 409);
  assert.equal((early.json as unknown as { code: string }).code, "CHAT_MEDIA_NOT_UPLOADED");
  const leftovers = async () => (await readdir(mediaDir)).filter((f) => f.startsWith(".upload-"));
  for (let i = 0; i < 50 && (await leftovers()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(await leftovers(), [], "no temporary file left behind");
  assert.equal((await put(json.upload.url, data, { "content-type": "application/pdf" })).status, 200);
  assert.equal((await send(ana, "the report", json.media.id)).status, 201);
});

test("CH-24 a message carries only media its sender may see and that is stored", async () => {
  const data = bytesOf(500, 1);
  const { json } = await authorize(ana, "image/gif", data.byteLength);
  const id = json.media.id;
  const code = (r: { json: unknown }) => (r.json as { code: string }).code;
  // Not uploaded yet: the sender is told to upload first.
  const early = await send(ana, "", id);
  assert.equal(early.status, 409);
  assert.equal(code(early), "CHAT_MEDIA_NOT_UPLOADED");
  // Someone else's media, not shared with them: as if it did not exist.
  const stolen = await send(bruno, "", id);
  assert.equal(stolen.status, 404);
  assert.equal(code(stolen), "CHAT_MEDIA_NOT_FOUND");
  const unknown = await send(ana, "", "123456789");
  assert.equal(unknown.status, 404);
  // Without media the body must not be empty.
  const empty = await send(ana, "");
  assert.equal(empty.status, 400);
  assert.equal(code(empty), "CHAT_MESSAGE_INVALID");
  // Once shared with bruno, he may forward it to another conversation (the reference, not the bytes).
  await put(json.upload.url, data, { "content-type": "image/gif" });
  assert.equal((await send(ana, "", id)).status, 201);
  const direct = await sys.api<{ id: string }>(bruno, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["carol"],
  });
  assert.equal((await send(bruno, "fwd", id, direct.json.id)).status, 201);
  assert.equal(
    (await sys.api(carol, "GET", `/v1/media/${id}`)).status,
    200,
    "carol sees it through bruno's message",
  );
});

test("CH-24 deleting the message takes the reference away from its members", async () => {
  const data = bytesOf(700, 2);
  const { json } = await authorize(ana, "audio/ogg", data.byteLength);
  await put(json.upload.url, data, { "content-type": "audio/ogg" });
  const sent = await send(ana, "voice note", json.media.id);
  const lonely = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["bruno"],
  });
  // Another conversation they share gives bruno nothing once the message that carried it is gone.
  assert.equal((await send(ana, "hi", undefined, lonely.json.id)).status, 201);
  assert.equal((await sys.api(bruno, "GET", `/v1/media/${json.media.id}`)).status, 200);
  const gone = await sys.api<{ message: ClientMessage }>(
    ana,
    "DELETE",
    `/v1/conversations/${chatId}/messages/${sent.json.message.id}`,
  );
  assert.equal(gone.status, 201);
  const page = await sys.api<{ messages: ClientMessage[] }>(
    bruno,
    "GET",
    `/v1/conversations/${chatId}/messages?after=0`,
  );
  const tombstone = page.json.messages.find((m) => m.id === sent.json.message.id)!;
  assert.equal(tombstone.media, null);
  assert.equal((await sys.api(bruno, "GET", `/v1/media/${json.media.id}`)).status, 404);
  assert.equal(
    (await sys.api(ana, "GET", `/v1/media/${json.media.id}`)).status,
    200,
    "the uploader keeps it",
  );
});

test("CH-24 upload requests are checked by field, and pending uploads are bounded per user", async () => {
  const field = (r: { json: unknown }) => (r.json as { errors?: { field: string }[]; field?: string }).field;
  const big = await authorize(ana, "image/png", MAX_BYTES + 1);
  assert.equal(big.status, 400);
  assert.equal(field(big), "bytes");
  const html = await authorize(ana, "text/html; charset=utf-8", 10);
  assert.equal(html.status, 400);
  assert.equal(field(html), "contentType");
  const coerced = await sys.api(ana, "POST", "/v1/media", { contentType: "image/png", bytes: "10" });
  assert.equal(coerced.status, 400, "no coercion: bytes is an integer");
  const dave = await sys.token("dave");
  const grants = [];
  for (let i = 0; i < MAX_PENDING_UPLOADS; i++) grants.push(await authorize(dave, "image/png", 10));
  assert.ok(grants.every((g) => g.status === 201));
  const over = await authorize(dave, "image/png", 10);
  assert.equal(over.status, 429);
  assert.equal((over.json as unknown as { code: string }).code, "CHAT_MEDIA_PENDING_TOO_MANY");
  // An upload used up frees its place.
  await put(grants[0]!.json.upload.url, bytesOf(10), { "content-type": "image/png" });
  const direct = await sys.api<{ id: string }>(dave, "POST", "/v1/conversations", {
    kind: "direct",
    members: ["ana"],
  });
  assert.equal((await send(dave, "", grants[0]!.json.media.id, direct.json.id)).status, 201);
  assert.equal((await authorize(dave, "image/png", 10)).status, 201);
});

test("CH-24 two uploads racing for one key: exactly one lands, whole", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-objects-"));
  try {
    const objects = new ObjectDirectory(dir);
    for (let round = 0; round < 20; round++) {
      const key = String(1_000 + round);
      const a = bytesOf(64_000, 1);
      const b = bytesOf(64_000, 2);
      const chunks = async function* (bytes: Uint8Array) {
        for (let i = 0; i < bytes.byteLength; i += 4_096) yield bytes.subarray(i, i + 4_096);
      };
      const outcomes = await Promise.allSettled([
        objects.put(key, chunks(a), 64_000),
        objects.put(key, chunks(b), 64_000),
      ]);
      const won = outcomes.filter((o) => o.status === "fulfilled");
      assert.equal(won.length, 1, `round ${round}: one winner`);
      const lost = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
      assert.equal(lost.reason.code, "OBJECT_EXISTS");
      const winner = (won[0] as PromiseFulfilledResult<{ sha256: string }>).value.sha256;
      assert.equal((await objects.digest(key))?.sha256, winner);
    }
    assert.deepEqual(
      (await readdir(dir)).filter((f) => f.startsWith(".")),
      [],
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
