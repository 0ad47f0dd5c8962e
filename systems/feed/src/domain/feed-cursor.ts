/**
 * The feed's cursors (FD-15): a position by Snowflake id, never an OFFSET — the feed grows
 * at the top between two pages, and an offset would then repeat items (or skip them after a
 * delete). `before` pages back in time; `since` asks for what is newer (pull-to-refresh).
 * Opaque to clients (base64url of `b:<id>` / `s:<id>`); anything else is refused naming
 * the field, never a 500.
 *
 * @example
 * const cursor = encodeCursor({ before: 123n });
 * decodeCursor(cursor, "cursor"); // { before: 123n }
 */
import { errors } from "../errors.ts";

export type FeedCursor = { readonly before: bigint } | { readonly since: bigint };

/** FD-22: a position in a session's stored ranking; the id cursor does not apply there. */
export interface RankedCursor {
  readonly session: string;
  readonly offset: number;
}

const RANKED_SHAPE = /^r:([A-Za-z0-9_-]{8,32}):(0|[1-9][0-9]{0,3})$/;

export function encodeRankedCursor(cursor: RankedCursor): string {
  return Buffer.from(`r:${cursor.session}:${cursor.offset}`, "utf8").toString("base64url");
}

/** A ranked cursor a client sent back; FEED_CURSOR_INVALID naming `field` otherwise (an id cursor included). */
export function decodeRankedCursor(text: string, field: string): RankedCursor {
  const match =
    text.length <= MAX_CURSOR_CHARS
      ? RANKED_SHAPE.exec(Buffer.from(text, "base64url").toString("utf8"))
      : null;
  const cursor = match ? { session: match[1]!, offset: Number(match[2]) } : undefined;
  if (!cursor || encodeRankedCursor(cursor) !== text)
    throw errors.create("FEED_CURSOR_INVALID", { fields: { field } });
  return cursor;
}

const SHAPE = /^([bs]):([1-9][0-9]{0,18})$/;
const MAX_CURSOR_CHARS = 64;

export function encodeCursor(cursor: FeedCursor): string {
  const text = "before" in cursor ? `b:${cursor.before}` : `s:${cursor.since}`;
  return Buffer.from(text, "utf8").toString("base64url");
}

/** The cursor a client sent back; FEED_CURSOR_INVALID naming `field` when this API did not make it. */
export function decodeCursor(text: string, field: string): FeedCursor {
  const match =
    text.length <= MAX_CURSOR_CHARS ? SHAPE.exec(Buffer.from(text, "base64url").toString("utf8")) : null;
  const id = match ? BigInt(match[2]!) : -1n;
  if (
    !match ||
    id > 0x7fff_ffff_ffff_ffffn ||
    encodeCursor(match[1] === "b" ? { before: id } : { since: id }) !== text
  )
    throw errors.create("FEED_CURSOR_INVALID", { fields: { field } });
  return match[1] === "b" ? { before: id } : { since: id };
}
