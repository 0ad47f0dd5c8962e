/**
 * Keyset pagination cursors (WH-12 listings). A cursor is the position of the last row
 * of a page — `(created_at, id)` for deliveries, `attempt_no` for attempts — so the next
 * page is `WHERE (created_at, id) < ($1, $2)`, an index range scan whatever the depth,
 * instead of an OFFSET that rereads every skipped row. It is opaque to clients
 * (base64url JSON) and tagged with its listing, so a deliveries cursor cannot be
 * replayed against attempts. It holds positions only, never a tenant: the query that
 * reads it is tenant-scoped, so a forged cursor reveals nothing.
 *
 * @example
 * const next = encodeCursor("deliveries", [row.createdAt.getTime(), row.id]);
 * const [createdAtMs, id] = decodeCursor("deliveries", next, ["number", "string"]);
 */
import { storeErrors } from "../errors.ts";

export type CursorValue = number | string;
type CursorShape = readonly ("number" | "string")[];
type Decoded<S extends CursorShape> = { [K in keyof S]: S[K] extends "number" ? number : string };

/** Longest cursor accepted: an id and a timestamp need far less. */
export const MAX_CURSOR_CHARS = 512;
const CURSOR_VERSION = 1;

function invalid(listing: string): Error {
  return storeErrors.create("WEBHOOK_CURSOR_INVALID", { fields: { listing } });
}

/** The opaque cursor for a page that ended at `position`. */
export function encodeCursor(listing: string, position: readonly CursorValue[]): string {
  return Buffer.from(JSON.stringify([CURSOR_VERSION, listing, ...position]), "utf8").toString("base64url");
}

function parse(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
}

function valueFits(value: unknown, kind: "number" | "string"): boolean {
  if (kind === "number") return typeof value === "number" && Number.isSafeInteger(value);
  return typeof value === "string" && value.length > 0 && value.length <= 255;
}

/** The position in `cursor`, checked against `listing` and `shape`; WEBHOOK_CURSOR_INVALID otherwise. */
export function decodeCursor<const S extends CursorShape>(
  listing: string,
  cursor: string,
  shape: S,
): Decoded<S> {
  if (typeof cursor !== "string" || cursor.length === 0 || cursor.length > MAX_CURSOR_CHARS) {
    throw invalid(listing);
  }
  const parsed = parse(cursor);
  if (!Array.isArray(parsed) || parsed.length !== shape.length + 2) throw invalid(listing);
  if (parsed[0] !== CURSOR_VERSION || parsed[1] !== listing) throw invalid(listing);
  const position = parsed.slice(2);
  if (!shape.every((kind, i) => valueFits(position[i], kind))) throw invalid(listing);
  return position as Decoded<S>;
}
