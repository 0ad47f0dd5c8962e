/**
 * Pre-signed object URLs (CH-24), S3's query-string authentication in our own terms: the URL
 * `/v1/objects/{key}?sig=…` carries a kit signed token (HMAC-SHA256, key id, expiry) binding
 * the key, the method, the content type and — for an upload — the exact size. Whoever holds
 * the URL may do that one thing until it expires, and nothing else: the object store checks
 * the token and needs no user, no session and no database.
 *
 * The key is derived from the user-token secret (HMAC with a label of its own), so every send
 * service of a deployment signs and verifies alike and no second secret is configured.
 *
 * @example
 * const urls = new MediaUrls({ secret, clock });
 * const put = urls.upload("http://127.0.0.1:8102", "7311", "image/png", 2_048);
 * urls.verify(tokenFromQuery, "7311", "PUT"); // { contentType: "image/png", bytes: 2048 } or throws OBJECT_*
 */
import { createHmac } from "node:crypto";
import type { Clock } from "@casebook/kit/clock";
import { CasebookError } from "@casebook/kit/errors";
import { SignedTokens } from "@casebook/kit/signed-token";
import { DOWNLOAD_URL_TTL_MS, type SignedRequest, UPLOAD_URL_TTL_MS } from "../domain/media.ts";
import { errors } from "../errors.ts";

export const OBJECTS_PATH = "/v1/objects";

interface Grant {
  /** key */
  k: string;
  /** method */
  m: "PUT" | "GET";
  /** content type */
  t: string;
  /** exact size (PUT) */
  b?: number;
}

export class MediaUrls {
  readonly #tokens: SignedTokens<Grant>;
  readonly #clock: Clock;

  constructor(options: { secret: Uint8Array; clock: Clock }) {
    const secret = createHmac("sha256", options.secret).update("chat media urls v1").digest();
    this.#tokens = new SignedTokens<Grant>({ clock: options.clock, keys: [{ kid: "m1", secret }] });
    this.#clock = options.clock;
  }

  upload(baseUrl: string, key: string, contentType: string, bytes: number): SignedRequest {
    const headers = { "content-type": contentType, "content-length": String(bytes) };
    return this.#signed(baseUrl, { k: key, m: "PUT", t: contentType, b: bytes }, UPLOAD_URL_TTL_MS, headers);
  }

  download(baseUrl: string, key: string, contentType: string): SignedRequest {
    return this.#signed(baseUrl, { k: key, m: "GET", t: contentType }, DOWNLOAD_URL_TTL_MS, {});
  }

  #signed(baseUrl: string, grant: Grant, ttlMs: number, headers: Record<string, string>): SignedRequest {
    const sig = this.#tokens.sign(grant, ttlMs);
    return {
      method: grant.m,
      url: `${baseUrl}${OBJECTS_PATH}/${grant.k}?sig=${sig}`,
      headers,
      expiresAtMs: this.#clock.nowMs() + ttlMs,
    };
  }

  /** What the URL grants for `key` and `method`; OBJECT_SIGNATURE_INVALID or OBJECT_URL_EXPIRED otherwise. */
  verify(
    sig: string,
    key: string,
    method: "PUT" | "GET",
  ): { contentType: string; bytes: number | undefined } {
    let grant: Grant;
    try {
      grant = this.#tokens.verify(sig).data;
    } catch (err) {
      if (err instanceof CasebookError && err.code === "TOKEN_EXPIRED")
        throw errors.create("OBJECT_URL_EXPIRED", { fields: { key } });
      throw errors.create("OBJECT_SIGNATURE_INVALID", { fields: { key, field: "sig" } });
    }
    if (grant.k !== key || grant.m !== method)
      throw errors.create("OBJECT_SIGNATURE_INVALID", { fields: { key, field: "sig" } });
    return { contentType: grant.t, bytes: grant.b };
  }
}
