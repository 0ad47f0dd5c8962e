/**
 * The cache node's error registry. Wire-protocol errors never travel as HTTP: the
 * server turns them into a RESP error line (`-ERR Protocol error: …`) and closes the
 * connection. The codes still matter: logs and the sidecar's metrics name them, and a
 * caller embedding the parser can tell a client's bad bytes from a bug.
 *
 * @example
 * throw cacheErrors.create("CACHE_PROTOCOL_INVALID", { detail: "Protocol error: invalid bulk length" });
 */
import { defineErrors } from "@casebook/kit/errors";

export const cacheErrors = defineErrors({
  CACHE_PROTOCOL_INVALID: {
    status: 400,
    message: "The client sent bytes that are not RESP; the connection is closed. Use a Redis client library.",
  },
  CACHE_QUERY_TOO_LARGE: {
    status: 413,
    message:
      "The client sent a request larger than the query buffer limit; split big values or raise the limit.",
  },
  CACHE_MAX_CLIENTS: {
    status: 503,
    message: "The node has reached its connection limit; pool connections or raise CACHE_MAX_CLIENTS.",
  },
  CACHE_CONFIG_INVALID: {
    status: 400,
    message: "A cache setting is invalid; see `field` for the setting and `expected` for valid values.",
  },
  CACHE_BENCH_ARGS_INVALID: {
    status: 400,
    message: "A bench flag is invalid; run the bench with --help for the flags and their ranges.",
  },
  CACHE_BENCH_TOOL_FAILED: {
    status: 500,
    message: "redis-benchmark failed or printed no result; see `stderr` for its output.",
  },
});

export type CacheErrorCode = keyof typeof cacheErrors.specs;
