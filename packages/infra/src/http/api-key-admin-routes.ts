/**
 * The operator's API-key routes, once for every system with an `ApiKeyTable` (payments'
 * merchants, webhooks' tenants). A system registers them inside its admin scope (behind
 * `createStaticTokenAuth` and its admin token), naming its owners' path segment:
 *
 *   GET    /v1/admin/{owners}/{id}/api-keys            200: prefix, createdAt, lastUsedAt, expiresAt,
 *                                                      revokedAt of each key — never a key or a hash
 *   POST   /v1/admin/{owners}/{id}/api-keys            201: another key, shown once
 *   POST   /v1/admin/{owners}/{id}/api-keys/rotate     201: a new key, live now; every other live key
 *                                                      keeps working `expiresInS` more seconds
 *   DELETE /v1/admin/{owners}/{id}/api-keys/{prefix}   204: that key stops working now
 *
 * Rotation overlaps instead of cutting over, so a fleet can be redeployed with the new key
 * while the old one still authenticates: issue (rotate), deploy, and the old key runs out on
 * its own (or is revoked early).
 *
 * @example
 * await app.register(async (scope) => {
 *   scope.addHook("onRequest", createStaticTokenAuth({ realm: "payments", token }));
 *   registerApiKeyAdminRoutes(scope, { owners: "merchants", keys: merchantKeys, db, clock, randomBytes,
 *     ownerNotFound: (id) => merchantErrors.create("PAYMENTS_MERCHANT_NOT_FOUND", { fields: { id } }) });
 * });
 */
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import { type ApiKeyInfo, type ApiKeyTable, MAX_ROTATION_OVERLAP_MS } from "../sql/api-key-table.ts";
import type { Database } from "../sql/sql.ts";
import { bearerSecurity } from "./bearer-auth.ts";

/** How long the old keys keep working after a rotation that does not say: an hour, enough for a rolling deploy. */
export const DEFAULT_ROTATION_OVERLAP_S = 3_600;
/** The longest overlap a rotation may ask for, in seconds (a week). */
export const MAX_ROTATION_OVERLAP_S = MAX_ROTATION_OVERLAP_MS / 1_000;
const OWNERS_PATTERN = /^[a-z][a-z-]{0,31}$/;

export interface ApiKeyAdminOptions {
  /** The owners' path segment: `merchants`, `tenants`. */
  owners: string;
  keys: ApiKeyTable;
  db: Database;
  clock: Clock;
  /** Cryptographically secure in production (node:crypto `randomBytes`). */
  randomBytes: RandomBytes;
  /** The system's own "no such owner" error (a 404 with its stable code). */
  ownerNotFound(ownerId: string): Error;
  /** The stable code of `ownerNotFound`'s error, listed among each route's 4xx in /openapi.json. */
  ownerNotFoundCode: string;
  /**
   * The owner id's JSON-schema pattern, when the owners' key is narrower than text (feed's int8
   * user ids: `^[1-9][0-9]{0,17}$`): another id is a 400 naming `/params/id`, not a database error.
   */
  ownerIdPattern?: string;
  /**
   * Called after a rotation or a revocation succeeded: a process that caches verified keys
   * (kit's VerifiedKeyCache) clears them here, so a key revoked through this process stops
   * working at once rather than at its cache's TTL.
   */
  onKeysChanged?: () => void;
}

const tags = ["admin"];
const instant = { type: "string", format: "date-time" } as const;
const nullableInstant = { type: ["string", "null"], format: "date-time" } as const;

/** A key just issued, as every admin route that issues one answers it (the one time the key is shown). */
export const issuedApiKeyView = {
  type: "object",
  required: ["key", "prefix"],
  properties: {
    key: { type: "string", description: "The whole key: shown now, never again" },
    prefix: { type: "string", description: "Its public part, to tell keys apart and revoke one" },
  },
} as const;

const keyInfoView = {
  type: "object",
  required: ["prefix", "createdAt", "lastUsedAt", "expiresAt", "revokedAt"],
  properties: {
    prefix: { type: "string" },
    createdAt: instant,
    lastUsedAt: { ...nullableInstant, description: "Last authentication, to within a minute; null: never" },
    expiresAt: { ...nullableInstant, description: "When it stops (stopped) working; null: until revoked" },
    revokedAt: { ...nullableInstant, description: "When it was revoked; null: never" },
  },
} as const;

function ownerIdSchema(pattern: string | undefined) {
  return {
    type: "string",
    minLength: 1,
    maxLength: 100,
    ...(pattern === undefined ? {} : { pattern }),
  } as const;
}

const rotateBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: {
    expiresInS: {
      type: "integer",
      minimum: 0,
      maximum: MAX_ROTATION_OVERLAP_S,
      description: `How long the other keys keep working, in seconds (default ${DEFAULT_ROTATION_OVERLAP_S}; 0: stop now)`,
    },
  },
} as const;

function toInfoJson(info: ApiKeyInfo) {
  return {
    prefix: info.prefix,
    createdAt: info.createdAt.toISOString(),
    lastUsedAt: info.lastUsedAt?.toISOString() ?? null,
    expiresAt: info.expiresAt?.toISOString() ?? null,
    revokedAt: info.revokedAt?.toISOString() ?? null,
  };
}

/** Registers the four routes on `app` (the caller's admin scope); see the module comment. */
export function registerApiKeyAdminRoutes(app: FastifyInstance, options: ApiKeyAdminOptions): void {
  if (!OWNERS_PATTERN.test(options.owners))
    throw new RangeError(`owners ${options.owners} must be a-z and -`);
  const base = `/v1/admin/${options.owners}/:id/api-keys`;
  const ownerParams = {
    type: "object",
    required: ["id"],
    additionalProperties: false,
    properties: { id: ownerIdSchema(options.ownerIdPattern) },
  } as const;
  // The admin token is a bearer credential (the caller's scope checks it): declared once, per route.
  const auth = { security: bearerSecurity, errorCodes: [options.ownerNotFoundCode] } as const;
  const { db, keys, clock } = options;
  const requireOwner = async (id: string) => {
    if (!(await keys.ownerExists(db, id))) throw options.ownerNotFound(id);
  };

  app.get<{ Params: { id: string } }>(
    base,
    {
      schema: {
        summary: "List an owner's API keys: prefixes and times, never the keys",
        tags,
        ...auth,
        params: ownerParams,
        response: {
          200: {
            type: "object",
            required: ["keys"],
            properties: { keys: { type: "array", items: keyInfoView } },
          },
        },
      },
    },
    async (request) => {
      await requireOwner(request.params.id);
      return { keys: (await keys.list(db, request.params.id)).map(toInfoJson) };
    },
  );

  app.post<{ Params: { id: string } }>(
    base,
    {
      schema: {
        summary: "Issue another API key (shown once); the others keep working",
        tags,
        ...auth,
        params: ownerParams,
        response: { 201: issuedApiKeyView },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const issued = await db.transaction(async (tx) => {
        if (!(await keys.ownerExists(tx, id, true))) throw options.ownerNotFound(id);
        return keys.issue(tx, id, { nowMs: clock.nowMs(), randomBytes: options.randomBytes });
      });
      return reply.code(201).send({ key: issued.key, prefix: issued.prefix });
    },
  );

  app.post<{ Params: { id: string }; Body: { expiresInS?: number } | null }>(
    `${base}/rotate`,
    {
      schema: {
        summary: "Rotate: a new key (shown once), the others expiring after an overlap",
        tags,
        ...auth,
        params: ownerParams,
        body: rotateBody,
        response: {
          201: {
            type: "object",
            required: ["key", "prefix", "previousKeysExpireAt"],
            properties: { ...issuedApiKeyView.properties, previousKeysExpireAt: instant },
          },
        },
      },
    },
    async (request, reply) => {
      const overlapS = request.body?.expiresInS ?? DEFAULT_ROTATION_OVERLAP_S;
      const rotated = await keys.rotate(db, request.params.id, {
        nowMs: clock.nowMs(),
        randomBytes: options.randomBytes,
        overlapMs: overlapS * 1_000,
      });
      if (!rotated) throw options.ownerNotFound(request.params.id);
      options.onKeysChanged?.();
      return reply.code(201).send({
        key: rotated.key,
        prefix: rotated.prefix,
        previousKeysExpireAt: new Date(rotated.previousExpireAtMs).toISOString(),
      });
    },
  );

  app.delete<{ Params: { id: string; prefix: string } }>(
    `${base}/:prefix`,
    {
      schema: {
        summary: "Revoke one API key, effective now",
        tags,
        ...auth,
        errorCodes: [options.ownerNotFoundCode, "RESOURCE_NOT_FOUND"],
        params: {
          type: "object",
          required: ["id", "prefix"],
          additionalProperties: false,
          properties: {
            id: ownerIdSchema(options.ownerIdPattern),
            prefix: { type: "string", minLength: 1, maxLength: 100 },
          },
        },
        response: { 204: { type: "null" } },
      },
    },
    async (request, reply) => {
      const { id, prefix } = request.params;
      await requireOwner(id);
      if (!(await keys.revoke(db, id, prefix, clock.nowMs()))) {
        const detail = "No live API key with this prefix belongs to this owner.";
        throw commonErrors.create("RESOURCE_NOT_FOUND", { detail, fields: { id, prefix } });
      }
      options.onKeysChanged?.();
      return reply.code(204).send();
    },
  );
}
