/**
 * Bearer authentication (RFC 6750) as a Fastify hook: `Authorization: Bearer <credential>` →
 * the request's principal (a merchant, a tenant), or 401 problem+json with `WWW-Authenticate`:
 *
 * - no usable credentials (no header, another scheme, an empty token): `AUTH_MISSING` and
 *   `WWW-Authenticate: Bearer realm="<realm>"` (§3.1: no error code when none was sent);
 * - a credential that is malformed, unknown, wrong or expired: `AUTH_INVALID` and
 *   `…, error="invalid_token"` — one code for all four, so a caller learns nothing about
 *   which keys exist.
 *
 * A credential longer than `maxCredentialChars` is refused without being looked up or hashed
 * (bounds the work a stranger can cause). The hook fits `onRequest`: a stranger's request is
 * refused before its body is even parsed. The principal is kept in a WeakMap keyed by the
 * request instead of a Fastify decoration: nothing to declare on Fastify's types, and an entry
 * goes away with its request; `principalOf` reads it.
 *
 * @example
 * const auth = createBearerAuth({ realm: "payments", verify: (key) => merchants.authenticate(key) });
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   scope.get("/v1/accounts", async (request) => list(auth.principalOf(request)));
 * });
 */
import { hash, timingSafeEqual } from "node:crypto";
import { commonErrors } from "@casebook/kit/errors";
import { isThenable } from "@casebook/kit/thenable";
import type { FastifyReply, FastifyRequest } from "fastify";

/** Longer than any key or token we issue: refused without hashing. */
export const DEFAULT_MAX_CREDENTIAL_CHARS = 256;
/** `[A-Za-z0-9_-]`: realms name a system; nothing to escape inside the quoted string. */
const REALM_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
const BEARER = /^Bearer +(\S+) *$/i;

export interface BearerAuthOptions<Principal> {
  /** Named in `WWW-Authenticate: Bearer realm="…"`: the system's name. */
  realm: string;
  /**
   * The principal a credential belongs to, or undefined (malformed, unknown, wrong, expired).
   * A plain value (a key cache's fresh entry) is taken in the same turn: no promise on the hit path.
   */
  verify(credential: string): Principal | undefined | Promise<Principal | undefined>;
  /** Default DEFAULT_MAX_CREDENTIAL_CHARS (256). */
  maxCredentialChars?: number;
}

export interface BearerAuth<Principal> {
  /** Fastify hook (`onRequest` or `preHandler`), callback style: records the request's principal, or fails with a 401. */
  authenticate(request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void;
  /** The principal `authenticate` recorded; throws on a route left outside the authenticated scope. */
  principalOf(request: FastifyRequest): Principal;
}

/**
 * The bearer token of an Authorization header, or undefined when there is none to check.
 *
 * @example
 * bearerToken("Bearer sk_1_x"); // "sk_1_x"
 * bearerToken("Basic dTpw");    // undefined
 */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  // The regex is linear and Node bounds header size (16 KiB): no length check needed before it.
  return typeof header === "string" ? BEARER.exec(header)?.[1] : undefined;
}

function checkRealm(realm: string): string {
  if (!REALM_PATTERN.test(realm)) throw new RangeError(`realm ${realm} must be 1-64 of [A-Za-z0-9_-]`);
  return realm;
}

/** Sets the RFC 6750 challenge and returns the 401: AUTH_INVALID when a credential was sent, else AUTH_MISSING. */
function refusal(reply: FastifyReply, challenge: string, presented: boolean): Error {
  reply.header("www-authenticate", presented ? `${challenge}, error="invalid_token"` : challenge);
  return commonErrors.create(presented ? "AUTH_INVALID" : "AUTH_MISSING");
}

/**
 * The hook and its accessor for credentials `verify` resolves to a principal.
 *
 * @example
 * const auth = createBearerAuth({ realm: "webhooks", verify: async (key) => (key === "k" ? "ten_1" : undefined) });
 */
export function createBearerAuth<Principal>(options: BearerAuthOptions<Principal>): BearerAuth<Principal> {
  const challenge = `Bearer realm="${checkRealm(options.realm)}"`;
  const maxChars = options.maxCredentialChars ?? DEFAULT_MAX_CREDENTIAL_CHARS;
  const principals = new WeakMap<FastifyRequest, Principal>();
  return {
    authenticate(request, reply, done) {
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) return done(refusal(reply, challenge, false));
      const admit = (principal: Principal | undefined) => {
        if (principal === undefined) return done(refusal(reply, challenge, true));
        principals.set(request, principal);
        done();
      };
      if (token.length > maxChars) return admit(undefined);
      let verified: Principal | undefined | Promise<Principal | undefined>;
      try {
        verified = options.verify(token);
      } catch (error) {
        return done(error as Error);
      }
      if (isThenable(verified)) verified.then(admit, done);
      else admit(verified);
    },
    principalOf(request) {
      // `has`, not `!== undefined`: a principal is whatever verify resolved, and only undefined means "none".
      if (!principals.has(request)) {
        // A bug, not a client error: the route was registered outside the authenticated scope.
        throw new Error(`no authenticated principal for ${request.url}`);
      }
      return principals.get(request) as Principal;
    },
  };
}

function sha256(text: string): Buffer {
  return hash("sha256", text, "buffer");
}

/**
 * A matcher for fixed tokens (an operator's admin or service tokens), compared in constant
 * time through their sha256: equal lengths, so a compare leaks nothing, not even the length;
 * every token is compared, so the time does not tell which one matched. For listeners that
 * are not Fastify (a gRPC server) and for `createStaticTokenAuth`.
 *
 * @example
 * const matches = staticTokenMatcher(["t1-…", "t2-…"]);
 * matches(bearerToken(metadataAuthorization) ?? ""); // true for either token
 */
export function staticTokenMatcher(
  tokens: string | readonly string[],
  maxCredentialChars = DEFAULT_MAX_CREDENTIAL_CHARS,
): (credential: string) => boolean {
  const list = typeof tokens === "string" ? [tokens] : tokens;
  if (list.length === 0 || list.some((token) => token === ""))
    throw new RangeError("static tokens must be at least one non-empty token");
  const expected = list.map(sha256);
  return (credential) => {
    if (credential.length > maxCredentialChars) return false;
    const presented = sha256(credential);
    let matched = false;
    for (const digest of expected) matched = timingSafeEqual(presented, digest) || matched;
    return matched;
  };
}

/**
 * A hook that admits fixed tokens (an operator's admin token; several while rotating one),
 * checked by `staticTokenMatcher`.
 *
 * @example
 * scope.addHook("onRequest", createStaticTokenAuth({ realm: "webhooks", token: config.adminToken }));
 */
export function createStaticTokenAuth(options: {
  realm: string;
  /** One token, or several (all admitted: rotate by adding the new one, then removing the old). */
  token: string | readonly string[];
  maxCredentialChars?: number;
}): (request: FastifyRequest, reply: FastifyReply) => Promise<void> {
  const challenge = `Bearer realm="${checkRealm(options.realm)}"`;
  const matches = staticTokenMatcher(options.token, options.maxCredentialChars);
  return async function authenticateStaticToken(request, reply) {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) throw refusal(reply, challenge, false);
    if (!matches(token)) throw refusal(reply, challenge, true);
  };
}

/** The security scheme name `bearerSecurity` refers to in /openapi.json. */
export const BEARER_SCHEME = "bearerAuth";

/**
 * A route's `schema.security`: it needs `Authorization: Bearer <credential>`. /openapi.json then
 * lists the requirement and the route's 401 problems (checking it is still the hook's job).
 *
 * @example
 * app.get("/v1/things", { schema: { security: bearerSecurity, response: { 200: things } } }, h);
 */
export const bearerSecurity: readonly Readonly<Record<string, readonly string[]>>[] = Object.freeze([
  Object.freeze({ [BEARER_SCHEME]: Object.freeze([]) }),
]);

/**
 * The service's `bearerAuth` security scheme, described: for createService's `openapi.securitySchemes`.
 *
 * @example
 * createService({ name: "payments", version, openapi: { securitySchemes: bearerSecurityScheme("Merchant API key") } });
 */
export function bearerSecurityScheme(description: string) {
  return { [BEARER_SCHEME]: { type: "http", scheme: "bearer", description } };
}
