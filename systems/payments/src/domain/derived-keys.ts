/**
 * The keys payments derives from a client's Idempotency-Key: the acquirer key of a payment
 * (`<merchant>:<key>`, sent on every acquirer call of it, PY-06, and its correlation id, PY-17),
 * the acquirer key of a refund (`<payment's>:refund:<key>`) and the ledger key of a refund
 * (`pay:<id>:refund:<key>`), and the ledger key of a ledger-API transfer (`api:<merchant>:<key>`).
 *
 * A client's key may be any 1-255 visible ASCII characters (@casebook/kit/idempotency-key), but
 * the acquirer takes keys of at most 255 of `[A-Za-z0-9._:-]` and the ledger keys of at most 255
 * characters. So a key enters a derived key as itself when it is at most 150 of the acquirer's
 * characters — every key the API accepted before the one rule, so every derived key is what it
 * was — and as `sha256.<64 hex>` of it otherwise. A key that itself looks like `sha256.<64 hex>`
 * is hashed too, so the mapping stays one-to-one: two keys never share an acquirer key.
 *
 * @example
 * paymentAcquirerKey("mer_1", "order-1");   // "mer_1:order-1"
 * paymentAcquirerKey("mer_1", "order/1");   // "mer_1:sha256.…" ('/' is not an acquirer character)
 * refundLedgerKey(7n, "rf-1");              // "pay:7:refund:rf-1"
 */
import { createHash } from "node:crypto";

/** The acquirer's key charset (sim/acquirer-schemas.ts), with room for the merchant and a refund's suffix. */
const PLAIN_KEY = /^[A-Za-z0-9._:-]{1,150}$/;
const DIGEST_KEY = /^sha256\.[0-9a-f]{64}$/;
/** The acquirer's bound on its idempotency keys. */
export const ACQUIRER_KEY_MAX_CHARS = 255;

function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** A client's key as it appears inside a derived key: itself when plain, else its digest. */
export function keyPart(idempotencyKey: string): string {
  return PLAIN_KEY.test(idempotencyKey) && !DIGEST_KEY.test(idempotencyKey)
    ? idempotencyKey
    : `sha256.${sha256Hex(idempotencyKey)}`;
}

/** The key sent to the acquirer on every attempt of a payment (PY-06); merchant ids hold no ':'. */
export function paymentAcquirerKey(merchantId: string, idempotencyKey: string): string {
  return `${merchantId}:${keyPart(idempotencyKey)}`;
}

/**
 * The key sent to the acquirer on every attempt of a refund. Two plain keys of 150 can make it
 * longer than the acquirer takes: then it is `<merchant>:refund.sha256.<digest of the long form>`
 * (one ':' where the long form has at least three, so the two forms never meet).
 */
export function refundAcquirerKey(paymentKey: string, refundIdempotencyKey: string): string {
  const long = `${paymentKey}:refund:${keyPart(refundIdempotencyKey)}`;
  if (long.length <= ACQUIRER_KEY_MAX_CHARS) return long;
  const merchantId = paymentKey.slice(0, paymentKey.indexOf(":"));
  return `${merchantId}:refund.sha256.${sha256Hex(long)}`;
}

/** The ledger idempotency key of a refund's reversal (PY-15): at most 4 + 19 + 8 + 150 characters. */
export function refundLedgerKey(paymentId: bigint, refundIdempotencyKey: string): string {
  return `pay:${paymentId}:refund:${keyPart(refundIdempotencyKey)}`;
}

/** The ledger key prefix of every transfer the merchant made through the ledger API. */
export function apiTransferKeyPrefix(merchantId: string): string {
  return `api:${merchantId}:`;
}

/**
 * The ledger idempotency key of a ledger-API transfer: at most 4 + 64 + 1 + 150 characters.
 * Merchant ids hold no ':', so the prefix also says whose transfer a ledger row is (tenancy).
 */
export function apiTransferLedgerKey(merchantId: string, idempotencyKey: string): string {
  return `${apiTransferKeyPrefix(merchantId)}${keyPart(idempotencyKey)}`;
}
