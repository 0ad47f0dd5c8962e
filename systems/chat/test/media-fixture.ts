/**
 * The media flow's calls as the tests make them (CH-24): authorize an upload, PUT its bytes to
 * the pre-signed URL, send a message carrying it.
 *
 * @example
 * const grant = await authorizeMedia(sys, token, "image/png", 10);
 * await putObject(grant.json.upload.url, bytesOf(10), { "content-type": "image/png" });
 * await sendMessage(sys, token, chatId, "caption", grant.json.media.id);
 */
import type { ClientMessage } from "../src/client/chat-client.ts";
import type { TestSystem } from "./system-fixture.ts";

export interface Grant {
  media: { id: string; contentType: string; bytes: number; sha256: string | null; status: string };
  upload: { method: string; url: string; headers: Record<string, string>; expiresAt: string };
}

/** `n` bytes of a repeatable pattern (`seed` varies it). */
export const bytesOf = (n: number, seed = 7) =>
  Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

export function authorizeMedia(sys: TestSystem, token: string, contentType: string, bytes: number) {
  return sys.api<Grant>(token, "POST", "/v1/media", { contentType, bytes });
}

export function putObject(url: string, body: Uint8Array, headers: Record<string, string>) {
  return fetch(url, { method: "PUT", headers, body });
}

/** A message into `chatId`, with media when `mediaId` is given. */
export function sendMessage(sys: TestSystem, token: string, chatId: string, body: string, mediaId?: string) {
  return sys.api<{ message: ClientMessage; created: boolean }>(
    token,
    "POST",
    `/v1/conversations/${chatId}/messages`,
    { clientMsgId: crypto.randomUUID(), body, ...(mediaId === undefined ? {} : { mediaId }) },
  );
}
