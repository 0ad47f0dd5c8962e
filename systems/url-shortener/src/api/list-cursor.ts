/**
 * The links listing's cursor: the last row's (createdAt, domain, code), base64url JSON. Opaque
 * to clients; a cursor this API did not make is LINK_CURSOR_INVALID, never a 500.
 *
 * @example
 * decodeCursor(encodeCursor(lastLink)); // { createdAt, domain, code }
 */
import { errors } from "../errors.ts";
import type { ListCursor } from "../store/link-repository.ts";

export function encodeCursor(last: ListCursor): string {
  return Buffer.from(JSON.stringify([last.createdAt.toISOString(), last.domain, last.code])).toString(
    "base64url",
  );
}

export function decodeCursor(cursor: string): ListCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    parsed = undefined;
  }
  if (
    Array.isArray(parsed) &&
    parsed.length === 3 &&
    parsed.every((part) => typeof part === "string" && part.length <= 300 && !part.includes("\u0000"))
  ) {
    const createdAt = new Date(parsed[0] as string);
    if (!Number.isNaN(createdAt.getTime())) return { createdAt, domain: parsed[1], code: parsed[2] };
  }
  throw errors.create("LINK_CURSOR_INVALID", { fields: { field: "cursor" } });
}
