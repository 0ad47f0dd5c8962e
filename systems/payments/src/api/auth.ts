/**
 * Merchant authentication: `Authorization: Bearer <api key>` → the merchant id, or 401
 * problem+json (`AUTH_MISSING` without usable credentials, `AUTH_INVALID` for a key that is
 * malformed, unknown, wrong or expired — one code for all four, so a caller learns nothing
 * about which keys exist). The key check itself (prefix lookup, constant-time hash compare)
 * lives in MerchantRepository.authenticate.
 *
 * The hook fits `onRequest` and `preHandler`. main.ts installs it as `onRequest` on the
 * authenticated scope: a stranger's request is refused before its body is even parsed.
 *
 * @example
 * const auth = createMerchantAuth((key) => merchants.authenticate(key));
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   scope.get("/v1/accounts", async (request) => list(auth.merchantOf(request)));
 * });
 */
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyReply, FastifyRequest } from "fastify";

/** Resolves the merchant a key belongs to, or undefined. */
export type VerifyApiKey = (key: string) => Promise<string | undefined>;

export interface MerchantAuth {
  /** Fastify hook: records the request's merchant, or throws a 401. */
  authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** The merchant `authenticate` recorded; throws on a route left outside the authenticated scope. */
  merchantOf(request: FastifyRequest): string;
}

/** Longer than any key we issue: refused without hashing (bounds the work a stranger can cause). */
const MAX_CREDENTIAL_CHARS = 256;
const BEARER = /^Bearer +(\S+) *$/i;

/** The bearer token of an Authorization header, or undefined when there is none to check. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  // The regex is linear and Node bounds header size (16 KiB): no length check needed before it.
  return typeof header === "string" ? BEARER.exec(header)?.[1] : undefined;
}

export function createMerchantAuth(verify: VerifyApiKey): MerchantAuth {
  // A WeakMap instead of a request decoration: nothing to declare on Fastify's types, and an entry
  // goes away with its request.
  const merchants = new WeakMap<FastifyRequest, string>();
  return {
    async authenticate(request, reply) {
      const token = bearerToken(request.headers.authorization);
      if (token === undefined) {
        reply.header("www-authenticate", 'Bearer realm="payments"');
        throw commonErrors.create("AUTH_MISSING");
      }
      const merchantId = token.length <= MAX_CREDENTIAL_CHARS ? await verify(token) : undefined;
      if (merchantId === undefined) {
        reply.header("www-authenticate", 'Bearer realm="payments", error="invalid_token"');
        throw commonErrors.create("AUTH_INVALID");
      }
      merchants.set(request, merchantId);
    },
    merchantOf(request) {
      const merchantId = merchants.get(request);
      // A bug, not a client error: the route was registered outside the authenticated scope.
      if (merchantId === undefined) throw new Error(`no authenticated merchant for ${request.url}`);
      return merchantId;
    },
  };
}
