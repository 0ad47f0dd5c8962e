/**
 * JSON-schema pieces every webhooks route shares: instants, nullable fields, id path parameters and
 * keyset pages. Ids travel as the store's `<kind>_<32 hex>` strings; a path id of any other
 * shape is simply not found (404, like another tenant's id: WH-12), so params are not
 * pattern-checked here.
 *
 * @example
 * app.get("/v1/things/:id", { schema: { security: bearerSecurity, params: idParams, response: { 200: view } } }, h);
 */
import { MAX_CURSOR_CHARS } from "../domain/store-cursor.ts";
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT } from "../store/pagination.ts";

/** Longest path id looked up: far above the 36 characters of ours, bounded all the same. */
export const MAX_PATH_ID_CHARS = 100;

export const idParams = {
  type: "object",
  required: ["id"],
  additionalProperties: false,
  properties: { id: { type: "string", minLength: 1, maxLength: MAX_PATH_ID_CHARS } },
} as const;

export const instant = { type: "string", format: "date-time" } as const;
export const nullableInstant = { type: ["string", "null"], format: "date-time" } as const;
export const nullableString = { type: ["string", "null"] } as const;
export const nullableInt = { type: ["integer", "null"] } as const;

/** `limit` and `cursor` of every listing. */
export const pageQueryProperties = {
  limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: DEFAULT_PAGE_LIMIT },
  cursor: {
    type: "string",
    minLength: 1,
    maxLength: MAX_CURSOR_CHARS,
    description: "nextCursor of the previous page",
  },
} as const;

export const pageQuery = {
  type: "object",
  additionalProperties: false,
  properties: pageQueryProperties,
} as const;

/** A page of `item`s and the cursor of the next one (null on the last page). */
export function pageOf<const Item extends object>(item: Item) {
  return {
    type: "object",
    required: ["items", "nextCursor"],
    properties: {
      items: { type: "array", items: item },
      nextCursor: { type: ["string", "null"], description: "null on the last page" },
    },
  } as const;
}

/** ISO 8601 of an instant, or null. */
export function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString();
}
