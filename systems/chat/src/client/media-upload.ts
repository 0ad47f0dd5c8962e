/**
 * Media by reference from the app's side (CH-24), for Node and the browser (fetch only):
 * ask the API for an upload, PUT the bytes straight to the object store's pre-signed URL,
 * and get back the media id a message then carries (`ChatClient.sendMedia`). The bytes never
 * travel over the socket nor through the send path. `downloadMedia` asks for a download URL
 * and fetches the bytes, checking their SHA-256 against the reference.
 *
 * @example
 * const { id } = await uploadMedia({ apiUrl, token, contentType: "image/png", data: png });
 * await client.sendMedia(chatId, id, "look at this");
 * const bytes = await downloadMedia({ apiUrl, token, mediaId: id });
 */
import type { MediaRef } from "../domain/media.ts";

export interface MediaUploadInput {
  /** The send service's base URL (http://…:8102). */
  readonly apiUrl: string;
  /** The user's JWT. */
  readonly token: string;
  readonly contentType: string;
  readonly data: Uint8Array;
}

/** What `uploadMedia` stored: the reference a message then carries. */
export type UploadedMedia = MediaRef;

/** A refusal by the API or the object store: the status and the problem's code. */
export class MediaRequestError extends Error {
  readonly status: number;
  readonly code: string | undefined;

  constructor(status: number, code: string | undefined, detail: string) {
    super(`${status} ${code ?? ""} ${detail}`.trim());
    this.name = "MediaRequestError";
    this.status = status;
    this.code = code;
  }
}

async function ok(res: Response): Promise<Response> {
  if (res.ok) return res;
  const problem = (await res.json().catch(() => ({}))) as { code?: string; detail?: string };
  throw new MediaRequestError(res.status, problem.code, problem.detail ?? res.statusText);
}

async function apiJson<T>(
  input: { apiUrl: string; token: string },
  path: string,
  init: RequestInit = {},
): Promise<T> {
  const res = await fetch(`${input.apiUrl.replace(/\/+$/, "")}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${input.token}`,
      ...(init.body ? { "content-type": "application/json" } : {}),
    },
  });
  return (await (await ok(res)).json()) as T;
}

interface Grant {
  media: { id: string; contentType: string; bytes: number; sha256: string | null };
  upload?: { url: string; headers: Record<string, string> };
  download?: { url: string };
}

export async function uploadMedia(input: MediaUploadInput): Promise<UploadedMedia> {
  const grant = await apiJson<Grant>(input, "/v1/media", {
    method: "POST",
    body: JSON.stringify({ contentType: input.contentType, bytes: input.data.byteLength }),
  });
  const upload = grant.upload!;
  // fetch sets Content-Length from the body itself; the signed type is sent as signed.
  const put = await ok(
    await fetch(upload.url, {
      method: "PUT",
      headers: { "content-type": upload.headers["content-type"] ?? input.contentType },
      body: input.data,
    }),
  );
  const stored = (await put.json()) as { sha256: string };
  return {
    id: grant.media.id,
    contentType: input.contentType,
    bytes: input.data.byteLength,
    sha256: stored.sha256,
  };
}

/** The media's bytes, verified against the SHA-256 its reference carries. */
export async function downloadMedia(input: {
  apiUrl: string;
  token: string;
  mediaId: string;
}): Promise<Uint8Array> {
  const grant = await apiJson<Grant>(input, `/v1/media/${input.mediaId}`);
  const res = await ok(await fetch(grant.download!.url));
  const bytes = new Uint8Array(await res.arrayBuffer());
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
  if (hex !== grant.media.sha256) {
    throw new MediaRequestError(
      502,
      "MEDIA_DIGEST_MISMATCH",
      `the bytes hash to ${hex}, not ${grant.media.sha256}`,
    );
  }
  return bytes;
}
