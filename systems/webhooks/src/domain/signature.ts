/**
 * Standard Webhooks signing (WH-13): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "id.timestamp.body">`, keyed with the bytes after `whsec_`. During a secret rotation
 * the sender signs with every live secret, space-separated, so a receiver holding either
 * the old or the new secret verifies (WH-02 "client secret rotation").
 *
 * Verification is here too, for receivers and tests: a timestamp tolerance window (a
 * captured request stops verifying after it) and a constant-time compare (no timing
 * oracle on the signature bytes). Replays inside the window need the id: see replay-guard.ts.
 *
 * @example
 * const headers = signedHeaders({ id: "msg_1", timestampS: 1_700_000_000, body, secrets: [secret] });
 * verifyWebhook({ headers, body, secrets: [secret], nowS: 1_700_000_010 }); // { id: "msg_1", timestampS: … }
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { deliveryErrors } from "../errors.ts";

export const SECRET_PREFIX = "whsec_";
/** Standard Webhooks: secrets are 24 to 64 random bytes. */
export const MIN_SECRET_BYTES = 24;
export const MAX_SECRET_BYTES = 64;
/** Bytes generateSecret draws. */
export const DEFAULT_SECRET_BYTES = 32;
/** The receiver's default window on `webhook-timestamp`, both directions (5 min). */
export const DEFAULT_TOLERANCE_S = 300;
/** Signatures a verifier looks at in one header: bounds the HMAC work a forged header can cause. */
export const MAX_SIGNATURES = 8;
/** Longest `webhook-id` accepted: it is a header and a dedupe key, not a payload. */
export const MAX_ID_LENGTH = 256;

const SIGNATURE_BYTES = 32; // SHA-256
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const HEADER_TOKEN = /^[\x21-\x7e]+$/;

/** The three headers a signed webhook carries. */
export interface WebhookHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * The HMAC key inside a `whsec_…` secret.
 *
 * @example
 * secretKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").length; // 24
 */
export function secretKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : undefined;
  if (encoded === undefined || !BASE64.test(encoded) || encoded.length % 4 !== 0) {
    throw deliveryErrors.create("WEBHOOK_SECRET_INVALID", { fields: { reason: "not whsec_<base64>" } });
  }
  const key = Buffer.from(encoded, "base64");
  if (key.length < MIN_SECRET_BYTES || key.length > MAX_SECRET_BYTES) {
    throw deliveryErrors.create("WEBHOOK_SECRET_INVALID", { fields: { reason: `${key.length} bytes` } });
  }
  return key;
}

/**
 * A fresh secret from `randomBytes` (inject `crypto.randomBytes`; domain code does no I/O).
 *
 * @example
 * const secret = generateSecret((n) => randomBytes(n)); // "whsec_…"
 */
export function generateSecret(randomBytes: (n: number) => Uint8Array, bytes = DEFAULT_SECRET_BYTES): string {
  if (!Number.isInteger(bytes) || bytes < MIN_SECRET_BYTES || bytes > MAX_SECRET_BYTES) {
    throw new RangeError(`secret bytes must be ${MIN_SECRET_BYTES}..${MAX_SECRET_BYTES}, got ${bytes}`);
  }
  const drawn = randomBytes(bytes);
  if (drawn.length !== bytes) throw new RangeError(`randomBytes(${bytes}) returned ${drawn.length} bytes`);
  return SECRET_PREFIX + Buffer.from(drawn).toString("base64");
}

function requireId(id: string): void {
  if (id.length === 0 || id.length > MAX_ID_LENGTH || !HEADER_TOKEN.test(id)) {
    throw new RangeError(`webhook id must be 1..${MAX_ID_LENGTH} visible ASCII characters`);
  }
}

function requireTimestamp(timestampS: number): void {
  if (!Number.isSafeInteger(timestampS) || timestampS < 0) {
    throw new RangeError(`timestampS must be whole seconds >= 0, got ${timestampS}`);
  }
}

function hmac(key: Buffer, id: string, timestampS: number, body: string | Uint8Array): Buffer {
  return createHmac("sha256", key).update(`${id}.${timestampS}.`).update(body).digest();
}

/**
 * The `webhook-signature` value: one `v1,<base64>` per secret, space-separated.
 *
 * @example
 * sign({ id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestampS: 1614265330, body: '{"test": 2432232314}',
 *        secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"] });
 * // "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
 */
export function sign(input: {
  id: string;
  timestampS: number;
  body: string | Uint8Array;
  secrets: readonly string[];
}): string {
  requireId(input.id);
  requireTimestamp(input.timestampS);
  if (input.secrets.length === 0 || input.secrets.length > MAX_SIGNATURES) {
    throw new RangeError(`sign needs 1..${MAX_SIGNATURES} secrets, got ${input.secrets.length}`);
  }
  return input.secrets
    .map(
      (secret) => `v1,${hmac(secretKey(secret), input.id, input.timestampS, input.body).toString("base64")}`,
    )
    .join(" ");
}

/** The three Standard Webhooks headers for one attempt. */
export function signedHeaders(input: {
  id: string;
  timestampS: number;
  body: string | Uint8Array;
  secrets: readonly string[];
}): WebhookHeaders {
  return {
    "webhook-id": input.id,
    "webhook-timestamp": String(input.timestampS),
    "webhook-signature": sign(input),
  };
}

export type VerifyFailure =
  | "missing-header"
  | "malformed-timestamp"
  | "timestamp-too-old"
  | "timestamp-too-new"
  | "no-matching-signature";

function fail(reason: VerifyFailure): Error {
  return deliveryErrors.create("WEBHOOK_SIGNATURE_INVALID", { fields: { reason } });
}

function headerOf(headers: Record<string, string | string[] | undefined>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

/** Decoded `v1` signatures of a header, at most MAX_SIGNATURES; other versions are skipped. */
function v1Signatures(header: string): Buffer[] {
  const found: Buffer[] = [];
  for (const part of header.split(" ").slice(0, MAX_SIGNATURES)) {
    const comma = part.indexOf(",");
    if (comma < 0 || part.slice(0, comma) !== "v1") continue;
    const encoded = part.slice(comma + 1);
    if (!BASE64.test(encoded)) continue;
    const bytes = Buffer.from(encoded, "base64");
    if (bytes.length === SIGNATURE_BYTES) found.push(bytes);
  }
  return found;
}

function checkTimestamp(raw: string, nowS: number, toleranceS: number): number {
  if (!/^\d{1,15}$/.test(raw)) throw fail("malformed-timestamp");
  const timestampS = Number(raw);
  if (nowS - timestampS > toleranceS) throw fail("timestamp-too-old");
  if (timestampS - nowS > toleranceS) throw fail("timestamp-too-new");
  return timestampS;
}

/**
 * Verifies a received webhook against every secret the receiver holds; returns its id
 * and timestamp or throws WEBHOOK_SIGNATURE_INVALID naming the reason.
 *
 * @example
 * const { id } = verifyWebhook({ headers: req.headers, body: rawBody, secrets, nowS: Math.floor(Date.now() / 1000) });
 */
export function verifyWebhook(input: {
  headers: Record<string, string | string[] | undefined>;
  body: string | Uint8Array;
  secrets: readonly string[];
  nowS: number;
  toleranceS?: number;
}): { id: string; timestampS: number } {
  const id = headerOf(input.headers, "webhook-id");
  const rawTimestamp = headerOf(input.headers, "webhook-timestamp");
  const signature = headerOf(input.headers, "webhook-signature");
  if (!id || !rawTimestamp || !signature) throw fail("missing-header");
  if (id.length > MAX_ID_LENGTH) throw fail("missing-header");
  const timestampS = checkTimestamp(rawTimestamp, input.nowS, input.toleranceS ?? DEFAULT_TOLERANCE_S);
  const offered = v1Signatures(signature);
  let matched = false;
  // Every pair is compared, without stopping at the first match: the time taken does
  // not tell which secret or which signature matched.
  for (const secret of input.secrets) {
    const expected = hmac(secretKey(secret), id, timestampS, input.body);
    for (const candidate of offered) matched = timingSafeEqual(candidate, expected) || matched;
  }
  if (!matched) throw fail("no-matching-signature");
  return { id, timestampS };
}
