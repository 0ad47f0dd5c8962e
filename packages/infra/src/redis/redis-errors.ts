/**
 * Errors of the Redis layer (the real engine and its in-process twin alike), so a
 * system handles one set of codes whichever engine runs underneath.
 *
 * Two codes matter most to callers that fail open or closed:
 * - `REDIS_UNAVAILABLE`: the command never reached Redis (down, refused, reconnecting).
 *   It did NOT run, so retrying it cannot double-apply.
 * - `REDIS_TIMEOUT`: the command was sent and no reply came within `commandTimeoutMs`.
 *   It MAY have run: a caller that must not apply twice treats the outcome as unknown.
 *
 * @example
 * try {
 *   await runner.run("take-token", [key], [nowMs]);
 * } catch (error) {
 *   if (redisErrors.is(error, "REDIS_UNAVAILABLE")) return failOpen();
 *   throw error;
 * }
 */
import { defineErrors } from "@casebook/kit/errors";

export const redisErrors = defineErrors({
  REDIS_URL_INVALID: {
    status: 500,
    message: "REDIS_URL is not a valid redis:// or rediss:// URL; fix the setting and restart.",
  },
  REDIS_UNAVAILABLE: {
    status: 503,
    message: "Redis is unreachable; the command was not run. Retry after a short delay.",
  },
  REDIS_TIMEOUT: {
    status: 503,
    message: "Redis did not answer in time; the command may or may not have run.",
  },
  REDIS_SCRIPT_INVALID: {
    status: 500,
    message: "A Lua script file breaks the script contract (name-numKeys.lua and its header); fix the file.",
  },
  REDIS_SCRIPT_UNKNOWN: {
    status: 500,
    message: "No script (or twin) is registered under this name; add the .lua file and its twin.",
  },
  REDIS_SCRIPT_ARITY: {
    status: 500,
    message: "A script was called with the wrong number of keys or arguments; match its header.",
  },
  REDIS_BATCH_TOO_LARGE: {
    status: 500,
    message: "A pipelined batch holds more calls than its maxBatch bound; split it into smaller batches.",
  },
  REDIS_SCRIPT_CROSS_SLOT: {
    status: 500,
    message: "A script's keys hash to different cluster slots; give them one {hash tag}.",
  },
  REDIS_SCRIPT_FAILED: {
    status: 500,
    message: "A Redis script answered with an error; `reply` holds the script's error text.",
  },
  REDIS_KEYSPACE_FULL: {
    status: 503,
    message:
      "The in-process store holds its maximum number of keys or elements; raise the bound or use Redis.",
  },
  REDIS_WRONG_TYPE: {
    status: 500,
    message: "WRONGTYPE Operation against a key holding the wrong kind of value",
  },
  REDIS_NOT_INTEGER: {
    status: 500,
    message: "ERR value is not an integer or out of range",
  },
});

export type RedisErrorCode = keyof typeof redisErrors.specs;
