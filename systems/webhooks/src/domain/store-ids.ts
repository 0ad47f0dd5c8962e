/**
 * Ids of the webhook store: `<kind>_<32 hex>`, 128 random bits. Unguessable on purpose
 * (WH-12): every read is also scoped to its tenant, but an id that cannot be enumerated
 * turns a forgotten `tenant_id` filter from a leak into a miss. Deliveries get theirs from
 * PostgreSQL's `gen_random_uuid()` during fan-out (same shape, 122 random bits), the rest
 * from the injected `randomBytes` (node:crypto's in production; a seeded one in tests).
 *
 * @example
 * newId("msg", randomBytes);               // "msg_3f9c…" (36 characters)
 * isId("sub", "sub_00ff…");                // true when the shape matches
 */
import type { RandomBytes } from "@casebook/kit/api-key";

export type { RandomBytes };

/** What each prefix names; `msg` follows Standard Webhooks' message ids. */
export type IdKind = "msg" | "sub" | "dlv" | "ten";

export const ID_RANDOM_BYTES = 16;
const ID_PATTERNS: Readonly<Record<IdKind, RegExp>> = {
  msg: /^msg_[0-9a-f]{32}$/,
  sub: /^sub_[0-9a-f]{32}$/,
  dlv: /^dlv_[0-9a-f]{32}$/,
  ten: /^ten_[0-9a-f]{32}$/,
};

/** A fresh id of `kind` from `randomBytes` (cryptographically secure outside tests). */
export function newId(kind: IdKind, randomBytes: RandomBytes): string {
  const bytes = randomBytes(ID_RANDOM_BYTES);
  if (bytes.length !== ID_RANDOM_BYTES) throw new Error(`randomBytes returned ${bytes.length} bytes`);
  return `${kind}_${Buffer.from(bytes).toString("hex")}`;
}

/** True when `value` has the shape of an id of `kind` (a cheap check before any lookup). */
export function isId(kind: IdKind, value: unknown): value is string {
  return typeof value === "string" && ID_PATTERNS[kind].test(value);
}
