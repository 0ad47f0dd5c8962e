/**
 * Who is calling: `Authorization: Bearer <key>`.
 *
 * - Tenant routes: the key is a tenant API key (`whk_…`, stored hashed, store/tenant-repository.ts)
 *   and resolves to the tenant every query of the request is scoped to (WH-12). Without
 *   usable credentials: 401 AUTH_MISSING; a key that is malformed, unknown, wrong or
 *   expired: 401 AUTH_INVALID — one code for all four, so a caller learns nothing about
 *   which keys exist.
 * - Admin routes (`/v1/admin/*`): the key is the operator's WEBHOOKS_ADMIN_TOKEN, compared
 *   in constant time through its sha256 (equal lengths, so the compare itself leaks nothing).
 *
 * Both hooks fit `onRequest`: a stranger's request is refused before its body is parsed.
 *
 * @example
 * const auth = createTenantAuth((key) => authenticateTenant(db, key, clock.nowMs()));
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   scope.get("/v1/subscriptions", async (request) => list(auth.tenantOf(request)));
 * });
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyReply, FastifyRequest } from "fastify";

/** Resolves the tenant a key belongs to, or undefined. */
export type VerifyTenantKey = (key: string) => Promise<string | undefined>;

export interface TenantAuth {
  /** Fastify hook: records the request's tenant, or throws a 401. */
  authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** The tenant `authenticate` recorded; throws on a route left outside the authenticated scope. */
  tenantOf(request: FastifyRequest): string;
}

/** Longer than any key or token we accept: refused without hashing (bounds a stranger's work). */
export const MAX_CREDENTIAL_CHARS = 256;
const BEARER = /^Bearer +(\S+) *$/i;
const REALM = 'Bearer realm="webhooks"';

/** The bearer token of an Authorization header, or undefined when there is none to check. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  // Linear regex on a header Node already bounds (16 KiB): no length check needed before it.
  return typeof header === "string" ? BEARER.exec(header)?.[1] : undefined;
}

function refuse(reply: FastifyReply, present: boolean): never {
  reply.header("www-authenticate", present ? `${REALM}, error="invalid_token"` : REALM);
  throw commonErrors.create(present ? "AUTH_INVALID" : "AUTH_MISSING");
}

/**
 * The tenant hook and its accessor.
 *
 * @example
 * const auth = createTenantAuth(async (key) => (key === "k" ? "ten_1" : undefined));
 */
export function createTenantAuth(verify: VerifyTenantKey): TenantAuth {
  // A WeakMap instead of a request decoration: nothing to declare on Fastify's types, and an
  // entry goes away with its request.
  const tenants = new WeakMap<FastifyRequest, string>();
  return {
    async authenticate(request, reply) {
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) refuse(reply, false);
      const tenantId = token.length <= MAX_CREDENTIAL_CHARS ? await verify(token) : undefined;
      if (tenantId === undefined) refuse(reply, true);
      tenants.set(request, tenantId);
    },
    tenantOf(request) {
      const tenantId = tenants.get(request);
      // A bug, not a client error: the route was registered outside the authenticated scope.
      if (tenantId === undefined) throw new Error(`no authenticated tenant for ${request.url}`);
      return tenantId;
    },
  };
}

function sha256(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

/**
 * The admin hook: the request must carry `Bearer <adminToken>`.
 *
 * @example
 * scope.addHook("onRequest", createAdminAuth(config.adminToken));
 */
export function createAdminAuth(adminToken: string) {
  const expected = sha256(adminToken);
  return async function authenticateAdmin(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) refuse(reply, false);
    if (token.length > MAX_CREDENTIAL_CHARS || !timingSafeEqual(sha256(token), expected)) refuse(reply, true);
  };
}
