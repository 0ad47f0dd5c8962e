/**
 * The ids the API shows for payments and refunds (migrations/013_opaque_ids.sql): `pay_` / `re_`
 * + 32 lowercase hex (a random UUID without its dashes), made by the column default, so an id says
 * nothing about how many payments anyone made. Rows from before 013 keep their old decimal id as
 * their public id, so old URLs still resolve. The tables' int8 `id` stays internal (foreign keys,
 * ledger keys `pay:<id>:…`, lease queues) and never leaves the service.
 *
 * An id of neither shape is answered like an unknown one (404): checking the shape first keeps
 * garbage away from the database and cannot tell a caller anything an unknown id would not.
 *
 * @example
 * isPaymentId("pay_3f2c…"); // true (32 hex after the prefix)
 * isPaymentId("7");         // true: a payment made before 013
 * isRefundId("pay_3f2c…");  // false
 */

/** A pre-013 id: a positive int8 in decimal (19 digits at most). */
const LEGACY_ID = "[1-9][0-9]{0,18}";
/** The shapes as JSON Schema patterns, for /openapi.json. */
export const PAYMENT_ID_PATTERN = `^(?:${LEGACY_ID}|pay_[0-9a-f]{32})$`;
export const REFUND_ID_PATTERN = `^(?:${LEGACY_ID}|re_[0-9a-f]{32})$`;
const PAYMENT_ID = new RegExp(PAYMENT_ID_PATTERN);
const REFUND_ID = new RegExp(REFUND_ID_PATTERN);

/** Whether `raw` has the shape of a payment's public id (new or pre-013). */
export function isPaymentId(raw: string): boolean {
  return PAYMENT_ID.test(raw);
}

/** Whether `raw` has the shape of a refund's public id (new or pre-013). */
export function isRefundId(raw: string): boolean {
  return REFUND_ID.test(raw);
}
