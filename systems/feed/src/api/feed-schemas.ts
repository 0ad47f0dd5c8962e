/**
 * JSON schemas of the feed API: what ajv refuses before a handler runs (400 REQUEST_INVALID
 * naming `/body/<field>` or `/querystring/<field>`), and what /openapi.json shows. Ids are
 * Snowflakes (64-bit): decimal strings on the wire, since JSON numbers lose them past 2^53.
 */

/** FD-01's post: a short text. */
export const MAX_POST_CHARS = 500;
export const MAX_PAGE = 100;
export const DEFAULT_PAGE = 50;

/**
 * A regular expression for the decimal integers 1..max (no sign, no leading zero): every
 * shorter length, then each prefix of `max` followed by a smaller digit, then `max` itself.
 *
 * @example
 * new RegExp(decimalUpToPattern("250")).test("251"); // false
 */
export function decimalUpToPattern(max: string): string {
  const shorter = max.length > 1 ? [`[1-9][0-9]{0,${max.length - 2}}`] : [];
  const sameLength: string[] = [];
  for (let i = 0; i < max.length; i++) {
    const low = i === 0 ? 1 : 0;
    const high = Number(max[i]) - 1;
    if (high < low) continue;
    const rest = max.length - 1 - i;
    sameLength.push(`${max.slice(0, i)}[${low}-${high}]${rest > 0 ? `[0-9]{${rest}}` : ""}`);
  }
  return `^(?:${[...shorter, ...sameLength, max].join("|")})$`;
}

/** PostgreSQL's int8 maximum: an id above it is refused here, not by the database (a 500). */
const MAX_INT8 = "9223372036854775807";

/** A decimal id (64-bit signed, positive), as every path and body carries it. */
export const userIdSchema = {
  type: "string",
  pattern: decimalUpToPattern(MAX_INT8),
  description: "A decimal id (1 to 2^63 − 1)",
} as const;
const id = userIdSchema;

export const userParams = {
  type: "object",
  required: ["userId"],
  properties: { userId: id },
} as const;

export const postParams = {
  type: "object",
  required: ["userId", "postId"],
  properties: { userId: id, postId: id },
} as const;

export const targetParams = {
  type: "object",
  required: ["userId", "targetId"],
  properties: { userId: id, targetId: id },
} as const;

export const postBody = {
  type: "object",
  required: ["text"],
  additionalProperties: false,
  properties: { text: { type: "string", minLength: 1, maxLength: MAX_POST_CHARS } },
} as const;

export const repostBody = {
  type: "object",
  required: ["postId"],
  additionalProperties: false,
  properties: { postId: id },
} as const;

export const hideBody = {
  type: "object",
  required: ["kind"],
  additionalProperties: false,
  properties: { kind: { type: "string", enum: ["mute", "block"] } },
} as const;

export const pageQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    limit: { type: "integer", minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
    cursor: { type: "string", minLength: 1, maxLength: 64 },
  },
} as const;

export const postView = {
  type: "object",
  required: ["id", "authorId", "kind", "text", "repostOf", "createdAt", "editedAt"],
  properties: {
    id,
    authorId: id,
    kind: { type: "string", enum: ["post", "repost"] },
    text: { type: ["string", "null"] },
    repostOf: { type: ["string", "null"] },
    createdAt: { type: "string", format: "date-time" },
    editedAt: { type: ["string", "null"], format: "date-time" },
  },
} as const;

export const feedPage = {
  type: "object",
  required: ["posts", "nextCursor", "newerCursor", "partial"],
  properties: {
    posts: { type: "array", items: postView },
    nextCursor: { type: ["string", "null"], description: "Older posts: pass as `cursor`" },
    newerCursor: { type: ["string", "null"], description: "Newer posts (pull-to-refresh): pass as `cursor`" },
    partial: { type: "boolean", description: "The timeline is being rebuilt: what exists now (HTTP 206)" },
  },
} as const;

export const rankedPage = {
  type: "object",
  required: ["posts", "nextCursor", "partial"],
  properties: {
    posts: { type: "array", items: postView },
    nextCursor: { type: ["string", "null"], description: "The next positions of this session's ranking" },
    partial: {
      type: "boolean",
      description: "The timeline was being rebuilt when the session was ranked (HTTP 206)",
    },
  },
} as const;

export interface PageQuery {
  limit: number;
  cursor?: string;
}
