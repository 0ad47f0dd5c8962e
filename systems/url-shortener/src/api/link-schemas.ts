/**
 * JSON schemas of the links API: what ajv refuses before a handler runs (400 REQUEST_INVALID
 * naming `/body/<field>`), and what /openapi.json shows. The rules that need more than a
 * schema (a URL's scheme, an expiry in the past, the alias's reserved shape) are in
 * domain/link-rules.ts and answer LINK_INVALID with `field`.
 */
import {
  ALIAS_PATTERN,
  MAX_CACHE_MAX_AGE_S,
  MAX_TAGS,
  MAX_TARGET_CHARS,
  REDIRECT_STATUSES,
} from "../domain/link-rules.ts";

export const tags = ["links"];
const instant = { type: "string", format: "date-time" } as const;
const tagList = {
  type: "array",
  maxItems: MAX_TAGS,
  items: { type: "string", pattern: "^[a-z0-9-]{1,32}$" },
} as const;

export const linkView = {
  type: "object",
  required: [
    "domain",
    "code",
    "shortUrl",
    "url",
    "status",
    "cacheMaxAgeS",
    "forwardQuery",
    "tags",
    "expiresAt",
    "disabled",
    "createdAt",
    "updatedAt",
  ],
  properties: {
    domain: { type: "string" },
    code: { type: "string" },
    shortUrl: { type: "string" },
    url: { type: "string" },
    status: { type: "integer", enum: [...REDIRECT_STATUSES] },
    cacheMaxAgeS: { type: "integer" },
    forwardQuery: { type: "boolean" },
    isAlias: { type: "boolean" },
    tags: { type: "array", items: { type: "string" } },
    expiresAt: { type: ["string", "null"], format: "date-time" },
    disabled: { type: "boolean" },
    disabledReason: { type: ["string", "null"] },
    createdAt: instant,
    updatedAt: instant,
  },
} as const;

export const createLinkBody = {
  type: "object",
  required: ["url"],
  additionalProperties: false,
  properties: {
    url: {
      type: "string",
      minLength: 1,
      maxLength: MAX_TARGET_CHARS,
      description: "An absolute http(s) URL",
    },
    domain: {
      type: "string",
      minLength: 1,
      maxLength: 260,
      description: "One of the service's domains (host[:port])",
    },
    alias: {
      type: "string",
      pattern: ALIAS_PATTERN.source,
      description:
        "A custom code (3-64 of A-Z a-z 0-9 _ -, not 7 letters and digits); default: a generated code",
    },
    status: { type: "integer", enum: [...REDIRECT_STATUSES], description: "Redirect status; default 302" },
    cacheMaxAgeS: { type: "integer", minimum: 0, maximum: MAX_CACHE_MAX_AGE_S },
    forwardQuery: {
      type: "boolean",
      description: "Append the short URL's query to the target; default true",
    },
    tags: tagList,
    expiresAt: { ...instant, description: "After this the link answers 410; must be in the future" },
  },
} as const;

export const patchLinkBody = {
  type: "object",
  additionalProperties: false,
  minProperties: 1,
  properties: {
    url: createLinkBody.properties.url,
    status: createLinkBody.properties.status,
    cacheMaxAgeS: createLinkBody.properties.cacheMaxAgeS,
    forwardQuery: createLinkBody.properties.forwardQuery,
    tags: tagList,
    expiresAt: { type: ["string", "null"], format: "date-time", description: "null: never expires" },
  },
} as const;

export const linkParams = {
  type: "object",
  required: ["domain", "code"],
  additionalProperties: false,
  properties: {
    domain: { type: "string", minLength: 1, maxLength: 260 },
    code: { type: "string", minLength: 1, maxLength: 64 },
  },
} as const;

export const MAX_PAGE = 100;
export const listQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    tag: { type: "string", pattern: "^[a-z0-9-]{1,32}$" },
    limit: { type: "integer", minimum: 1, maximum: MAX_PAGE, default: 20 },
    cursor: { type: "string", maxLength: 400 },
  },
} as const;

export const linkPage = {
  type: "object",
  required: ["links", "nextCursor"],
  properties: {
    links: { type: "array", items: linkView },
    nextCursor: { type: ["string", "null"] },
  },
} as const;

export const patchedLinkView = {
  type: "object",
  required: ["link", "warnings"],
  properties: { link: linkView, warnings: { type: "array", items: { type: "string" } } },
} as const;

export interface CreateLinkBody {
  url: string;
  domain?: string;
  alias?: string;
  status?: (typeof REDIRECT_STATUSES)[number];
  cacheMaxAgeS?: number;
  forwardQuery?: boolean;
  tags?: string[];
  expiresAt?: string;
}

export type PatchLinkBody = Omit<CreateLinkBody, "domain" | "alias" | "expiresAt"> & {
  expiresAt?: string | null;
};
