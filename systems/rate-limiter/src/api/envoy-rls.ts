/**
 * Envoy's v3 rate limit service over gRPC
 * (`envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`), so a stock Envoy's
 * `envoy.filters.http.ratelimit` filter can use this limiter the way it uses
 * envoyproxy/ratelimit. The wire contract is our own subset of Envoy's messages
 * (src/api/proto/, same package/field names and numbers).
 *
 * How a request is answered (docs/rate-limiter-envoy.md has the operator's version):
 * - `domain` must equal the policy config's `domain`; any other domain matches no
 *   policy and every descriptor is OK (envoyproxy/ratelimit does the same).
 * - Each Envoy descriptor becomes one of our descriptors: entry keys that are ours
 *   (`ip`, `apiKey`, `plan`, `user`, `route`, `method`) pass as they are, Envoy's
 *   built-in keys go through `keyAliases` (`remote_address` → ip, …). A descriptor
 *   with any other key, a repeated key or an empty value matches no policy (OK):
 *   Envoy sends the same descriptors whatever the service behind it knows.
 * - Like envoyproxy/ratelimit's nested descriptors, a descriptor selects the policies
 *   built from exactly its keys: the policy's key template plus its `match` (plus
 *   `route` when the policy has per-route costs). So [remote_address] hits `ip:{ip}`
 *   policies and [user, route] hits `user:{user}:route:{route}` policies, and one
 *   request never spends one policy twice through two descriptors.
 * - Units: the descriptor's `hits_addend` if set, else the request's if non-zero,
 *   else each policy's own cost. A descriptor `hits_addend` of 0 is Envoy's "check
 *   only": it spends nothing, and a request that spends nothing is never refused, so
 *   the answer is OK without touching the store. More units than a policy's burst
 *   can never pass: OVER_LIMIT at once, nothing spent.
 * - A fail-closed policy with the store down (`unavailable`) fails the whole call
 *   with gRPC UNAVAILABLE, so Envoy applies its own `failure_mode_deny`.
 * - Shadow policies are checked and logged but never make a descriptor OVER_LIMIT.
 * - With `tokens` set, a call must carry `authorization: Bearer <token>` metadata;
 *   otherwise it is UNAUTHENTICATED before anything is decoded or spent.
 * - Policies are never named on this API, so there is no "unknown policy" here: an
 *   unknown domain or descriptor limits nothing, as in envoyproxy/ratelimit (the HTTP
 *   API, where a caller names policies, refuses unknown names instead).
 *
 * @example
 * const rl = await createRateLimiter({ policies });
 * const rls = await startEnvoyRls({ limiter: rl.limiter, port: 8181, host: "127.0.0.1", log });
 * // envoy.yaml: rate_limit_service → grpc cluster at 127.0.0.1:<rls.port>, domain = policies.domain
 * await rls.close();
 */
import { bearerToken, staticTokenMatcher } from "@casebook/infra/http/bearer-auth";
import * as grpc from "@grpc/grpc-js";
import { isDescriptorKey } from "../domain/descriptors.ts";
import { rateLimitErrors } from "../errors.ts";
import {
  answerRlsRequest,
  type EnvoyRls,
  type EnvoyRlsOptions,
  envoyRlsDefaults,
} from "./envoy-rls-answer.ts";
import { loadEnvoyRlsService, type RlsRequest, type RlsResponse } from "./envoy-rls-wire.ts";

// ---------------------------------------------------------------- the server

/** Bytes that do not decode as a RateLimitRequest: answered INVALID_ARGUMENT, not INTERNAL. */
class Undecodable {
  readonly problem: string;
  constructor(problem: string) {
    this.problem = problem;
  }
}

function withLenientDecoding(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  const method = service.ShouldRateLimit;
  if (!method) throw new Error("RateLimitService has no ShouldRateLimit method");
  return {
    ShouldRateLimit: {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (error) {
          return new Undecodable(error instanceof Error ? error.message : String(error));
        }
      },
    },
  };
}

function bindAddress(host: string, port: number): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Starts the Envoy RLS gRPC server (plaintext HTTP/2, as Envoy's `envoy_grpc` cluster
 * speaks by default).
 *
 * @example
 * const rls = await startEnvoyRls({ limiter: rl.limiter, port: 0, host: "127.0.0.1", log });
 * console.log(`envoy rate_limit_service → 127.0.0.1:${rls.port}`);
 * await rls.close();
 */
export async function startEnvoyRls(options: EnvoyRlsOptions): Promise<EnvoyRls> {
  for (const [envoyKey, ours] of Object.entries(options.keyAliases ?? {}))
    if (!isDescriptorKey(ours))
      throw new TypeError(`keyAliases.${envoyKey}: ${ours} is not a descriptor key`);
  const maxMessageBytes = options.maxMessageBytes ?? envoyRlsDefaults.maxMessageBytes;
  const server = new grpc.Server({
    "grpc.max_receive_message_length": maxMessageBytes,
    "grpc.max_send_message_length": maxMessageBytes,
    "grpc.max_concurrent_streams": options.maxConcurrentStreams ?? envoyRlsDefaults.maxConcurrentStreams,
  });
  const matches =
    options.tokens && options.tokens.length > 0 ? staticTokenMatcher(options.tokens) : undefined;
  const handler: grpc.handleUnaryCall<RlsRequest | Undecodable, RlsResponse> = (call, callback) => {
    if (matches) {
      const [header] = call.metadata.get("authorization");
      const token = bearerToken(typeof header === "string" ? header : undefined);
      if (token === undefined || !matches(token)) {
        callback({
          code: grpc.status.UNAUTHENTICATED,
          details: `${token === undefined ? "no" : "a wrong"} bearer token: send metadata "authorization: Bearer <RATE_LIMITER_TOKEN>"`,
        });
        return;
      }
    }
    const request = call.request;
    if (request instanceof Undecodable) {
      callback({ code: grpc.status.INVALID_ARGUMENT, details: `not a RateLimitRequest: ${request.problem}` });
      return;
    }
    answerRlsRequest(request, options).then(
      (out) => ("error" in out ? callback(out.error) : callback(null, out.response)),
      (error: unknown) => {
        if (rateLimitErrors.is(error, "RATELIMIT_OVERLOADED")) {
          // Shed undecided: UNAVAILABLE, so Envoy applies its own failure_mode_deny (never a refusal).
          callback({ code: grpc.status.UNAVAILABLE, details: "rate limiter overloaded: the check was shed" });
          return;
        }
        options.log.error({ err: error }, "envoy rate limit call failed");
        callback({ code: grpc.status.INTERNAL, details: "rate limit decision failed; see the service log" });
      },
    );
  };
  server.addService(withLenientDecoding(loadEnvoyRlsService()), { ShouldRateLimit: handler });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      bindAddress(options.host, options.port),
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  const drainTimeoutMs = options.drainTimeoutMs ?? envoyRlsDefaults.drainTimeoutMs;
  return { port, close: () => shutdown(server, drainTimeoutMs) };
}

function shutdown(server: grpc.Server, drainTimeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, drainTimeoutMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
