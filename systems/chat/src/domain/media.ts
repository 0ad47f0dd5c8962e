/**
 * Media by reference (CH-24): "images and video go to object storage through a pre-signed
 * URL and the message carries only the reference". The bytes never pass through a message:
 *
 *   1. the app asks the API for an upload (content type, exact size) and gets a pre-signed
 *      PUT URL, valid UPLOAD_URL_TTL_MS, that admits exactly those bytes under a new media id;
 *   2. the app PUTs the bytes to the object store (a local directory by default), which
 *      checks the signature, the type and the size — no user token, no database;
 *   3. the app sends a message naming the media id (a caption as its body, maybe empty): the
 *      send service checks the media is the sender's and stored, and the message carries
 *      `MediaRef` — id, type, size and SHA-256, so a recipient can verify what it downloads;
 *   4. a member of a conversation holding that message (or the uploader) asks for the media
 *      and gets a pre-signed GET URL, valid DOWNLOAD_URL_TTL_MS.
 *
 * The rules below are applied by every entry point before anything is stored.
 *
 * @example
 * checkMediaRequest({ contentType: "image/png", bytes: 2_048 }, 16 * 1_048_576); // undefined: fine
 * checkMediaRequest({ contentType: "image/png", bytes: 0 }, 16 * 1_048_576);     // { field: "bytes", … }
 */

/** The reference a message carries (immutable once stored, so copied into the message). */
export interface MediaRef {
  /** A Snowflake, as a decimal string (the object's key). */
  readonly id: string;
  readonly contentType: string;
  readonly bytes: number;
  /** Hex SHA-256 of the stored bytes. */
  readonly sha256: string;
}

/** A pre-signed request: the method, the absolute URL, the headers it must carry, its end. */
export interface SignedRequest {
  readonly method: "PUT" | "GET";
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly expiresAtMs: number;
}

/** Default largest upload (WhatsApp's historical media limit); CHAT_MEDIA_MAX_BYTES moves it. */
export const DEFAULT_MAX_MEDIA_BYTES = 16 * 1_048_576;
/** The largest CHAT_MEDIA_MAX_BYTES accepts (a PUT is one request, streamed to disk). */
export const MAX_MEDIA_BYTES = 1_073_741_824;
/** An upload URL's life: long enough for a phone on a slow network, short enough to leak little. */
export const UPLOAD_URL_TTL_MS = 15 * 60_000;
/** A download URL's life: the app fetches at once; a new one is one API call away. */
export const DOWNLOAD_URL_TTL_MS = 5 * 60_000;
/** Uploads a user may have authorized and not yet used at once (each row and URL is a promise of space). */
export const MAX_PENDING_UPLOADS = 64;
/** A caption rides in one frame with the reference. */
export const MAX_CAPTION_CHARS = 4_096;
/**
 * What may be uploaded: a lower-case MIME type of the families a chat shows or attaches,
 * no parameters (a charset is the app's business).
 */
export const MEDIA_CONTENT_TYPE_PATTERN =
  /^(image|video|audio|application|text)\/[a-z0-9][a-z0-9.+-]{0,126}$/;

/** Why an upload request cannot be authorized (the field it names), or undefined. */
export function checkMediaRequest(
  input: { contentType: string; bytes: number },
  maxBytes: number,
): { field: "contentType" | "bytes"; detail: string } | undefined {
  if (!MEDIA_CONTENT_TYPE_PATTERN.test(input.contentType))
    return {
      field: "contentType",
      detail: "contentType is a lower-case image/, video/, audio/, application/ or text/ MIME type",
    };
  if (!Number.isSafeInteger(input.bytes) || input.bytes < 1)
    return { field: "bytes", detail: "bytes is the exact size of the upload, a positive integer" };
  if (input.bytes > maxBytes)
    return { field: "bytes", detail: `bytes is ${input.bytes}; uploads are at most ${maxBytes} bytes` };
  return undefined;
}
