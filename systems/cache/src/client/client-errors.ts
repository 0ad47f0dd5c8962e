/**
 * The client library's error registry (`CACHE_CLIENT_*`, and `CACHE_PROXY_*` for the routing
 * proxy). Kept apart from the node's `cacheErrors` because the two travel differently: the
 * node's errors become RESP error lines, these surface in the application that embeds the
 * client, where a caller must tell "the node said no" (SERVER_ERROR, with the node's reply
 * as a field) from "we never heard back" (TIMEOUT, split by phase) from "the link broke
 * with commands in flight" (CONNECTION_LOST: they may or may not have run).
 *
 * @example
 * throw clientErrors.create("CACHE_CLIENT_TIMEOUT", {
 *   fields: { address: "127.0.0.1:7000", phase: "reply", timeoutMs: 1_000 },
 * });
 */
import { defineErrors } from "@casebook/kit/errors";

export const clientErrors = defineErrors({
  CACHE_CLIENT_CONFIG_INVALID: {
    status: 400,
    message: "A client option is out of range; `field` names it and `expected` says what it accepts.",
  },
  CACHE_CLIENT_CONNECT_FAILED: {
    status: 503,
    message: "The client could not open a connection to the cache node at `address`; check it is running.",
  },
  CACHE_CLIENT_CONNECTION_LOST: {
    status: 503,
    message:
      "The connection to `address` closed with this command in flight; it may or may not have run, so retry only idempotent commands.",
  },
  CACHE_CLIENT_TIMEOUT: {
    status: 504,
    message:
      "The cache node at `address` did not answer within `timeoutMs` (`phase` says connect or reply); the connection was closed.",
  },
  CACHE_CLIENT_BACKPRESSURE: {
    status: 503,
    message:
      "Too many commands are waiting for replies on one connection (`maxPending`); slow down or add connections per node.",
  },
  CACHE_CLIENT_CLOSED: {
    status: 503,
    message: "The client (or this connection) was closed; create a new one.",
  },
  CACHE_CLIENT_PROTOCOL_INVALID: {
    status: 502,
    message: "The node sent bytes that are not a RESP reply; the connection was closed.",
  },
  CACHE_CLIENT_SERVER_ERROR: {
    status: 502,
    message: "The cache node answered with an error; `reply` holds its error line.",
  },
  CACHE_CLIENT_UNEXPECTED_REPLY: {
    status: 502,
    message: "The node's reply does not have the shape this command returns; `reply` shows what came back.",
  },
  CACHE_CLIENT_TOO_MANY_REDIRECTS: {
    status: 503,
    message:
      "A command was redirected or retried more than `maxRedirects` times (MOVED/ASK/CLUSTERDOWN); the cluster is resharding or unhealthy, retry later.",
  },
  CACHE_CLIENT_NO_NODES: {
    status: 503,
    message:
      "No cache node is known or reachable for this key (empty slot map or ring); check the seed nodes.",
  },
  CACHE_CLIENT_GUTTER_REFUSED: {
    status: 503,
    message:
      "The key's ring node is down and `command` cannot go to the gutter pool: it would leave a key there without the gutter's TTL cap (`ttlS`); retry when the node is back.",
  },
  CACHE_PROXY_CONFIG_INVALID: {
    status: 400,
    message: "A routing proxy option is invalid; `field` names it and `expected` says what it accepts.",
  },
});

export type ClientErrorCode = keyof typeof clientErrors.specs;

/**
 * Throws CACHE_CLIENT_CONFIG_INVALID unless `value` is an integer in [min, max].
 *
 * @example
 * requireClientInteger("connectionsPerNode", 2, 1, 64);
 */
export function requireClientInteger(field: string, value: number, min: number, max: number): void {
  if (!(Number.isInteger(value) && value >= min && value <= max)) {
    throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
      fields: { field, expected: `an integer in [${min}, ${max}]`, got: String(value) },
    });
  }
}

/**
 * Throws CACHE_CLIENT_CONFIG_INVALID unless `value` is a finite number in [min, max].
 *
 * @example
 * requireClientNumber("jitter", 0.1, 0, 1);
 */
export function requireClientNumber(field: string, value: number, min: number, max: number): void {
  if (!(typeof value === "number" && Number.isFinite(value) && value >= min && value <= max)) {
    throw clientErrors.create("CACHE_CLIENT_CONFIG_INVALID", {
      fields: { field, expected: `a number in [${min}, ${max}]`, got: String(value) },
    });
  }
}
