/**
 * Why a Redis client cannot serve, in plain words an operator acts on: "redis at
 * 127.0.0.1:6379 not reachable: connection refused", not ioredis's view of its own
 * state ("Stream isn't writeable and enableOfflineQueue options is false"). While the
 * client is disconnected every command fails with that same state message, so the
 * reason is taken from the last connection error the client reported (refused, no such
 * host, timed out, wrong password), which is what the operator can fix.
 *
 * @example
 * const reach = trackRedisReachability(redis);
 * service.addCheck("redis", () => reach.ping()); // /readyz: "redis at 10.0.0.7:6379 not reachable: connection refused"
 * if (!connected) log.warn(reach.unreachable());
 */
import { CasebookError } from "@casebook/kit/errors";
import { isClusterClient, type RedisClient } from "./connect-redis.ts";
import { redisErrors } from "./redis-errors.ts";

/** Socket and resolver codes in words. */
const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  EPIPE: "connection reset",
  ETIMEDOUT: "connect timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
};

/**
 * The gist of a Redis or socket error, without the client's internals.
 *
 * @example
 * plainRedisReason(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })); // "connection refused"
 */
export function plainRedisReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as Error & { code?: unknown }).code;
  if (typeof code === "string" && REASONS[code] !== undefined) return REASONS[code];
  const message = error.message;
  if (/^connect ETIMEDOUT|Command timed out/.test(message)) return "no answer in time";
  if (/^(NOAUTH|WRONGPASS)/.test(message)) return "authentication failed: check the URL's user and password";
  if (/^LOADING/.test(message)) return "still loading its dataset";
  if (/^(MISCONF|READONLY)/.test(message)) return message.split("\n")[0]!.toLowerCase();
  if (/Stream isn't writeable|Connection is closed|enableOfflineQueue|max retries per request/i.test(message))
    return "not connected";
  return message.split("\n")[0]!;
}

/** `host:port` of a single client, or "redis cluster". */
export function redisAddress(client: RedisClient): string {
  if (isClusterClient(client)) return "redis cluster";
  const { host, port, path } = client.options;
  return path ? `redis at ${path}` : `redis at ${host ?? "127.0.0.1"}:${port ?? 6379}`;
}

export interface RedisReachability {
  /** PING; rejects with REDIS_UNAVAILABLE whose message is the plain-words reason. */
  ping(): Promise<void>;
  /** "redis at host:port not reachable: <reason>", from the last connection error seen, else `fallback`. */
  unreachable(fallback?: string): string;
}

/**
 * Remembers the client's last connection error (a listener beside connectRedis's own) and
 * words failures with it.
 */
export function trackRedisReachability(client: RedisClient): RedisReachability {
  let lastConnectionError: unknown;
  const remember = (error: unknown) => {
    lastConnectionError = error;
  };
  client.on("error", remember);
  if (isClusterClient(client)) client.on("node error", remember);
  client.on("ready", () => {
    lastConnectionError = undefined;
  });
  const unreachable = (fallback = "not connected") =>
    `${redisAddress(client)} not reachable: ${lastConnectionError === undefined ? fallback : plainRedisReason(lastConnectionError)}`;
  return {
    unreachable,
    async ping() {
      try {
        await client.ping();
      } catch (cause) {
        if (cause instanceof CasebookError) throw cause;
        // A command's own failure is the client's state ("not connected"): the connection error says why.
        const own = plainRedisReason(cause);
        const detail =
          own === "not connected" ? unreachable() : `${redisAddress(client)} not reachable: ${own}`;
        throw redisErrors.create("REDIS_UNAVAILABLE", { detail, cause });
      }
    },
  };
}
