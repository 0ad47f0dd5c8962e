/**
 * MIGRATE (Redis's form, used by the resharding tool): moves keys to another node of
 * this cluster, atomically per call. The node serializes the keys (value and remaining
 * TTL), blocks while the transfer thread delivers them to the target's bus and the target
 * confirms (see api/cluster-key-transfer.ts), then deletes its copies (unless COPY).
 * Because nothing else runs meanwhile, a client write cannot land on the source between
 * the copy and the delete — the reason Redis's MIGRATE blocks too. On a timeout or an
 * error nothing is deleted: the keys stay served here, and a retry with REPLACE is safe.
 *
 * MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH pw] [AUTH2 user pw] [KEYS key …]
 *
 * @example
 * // MIGRATE 127.0.0.1 7001 "" 0 5000 REPLACE KEYS k1 k2 → OK (k1, k2 now on 7001 only)
 */

import { encodeFrame } from "../../cluster/api/cluster-bus-link.ts";
import type { ClusterRuntime } from "../../cluster/workers/cluster-runtime.ts";
import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import type { CommandContext, CommandSpec } from "./command-spec.ts";

/** Longest a MIGRATE may block the node, whatever the client asks. */
export const MAX_MIGRATE_TIMEOUT_MS = 10_000;
/** Redis's default when the timeout argument is 0 or less. */
const DEFAULT_MIGRATE_TIMEOUT_MS = 1_000;

interface MigrateRequest {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly copy: boolean;
  readonly replace: boolean;
  readonly keys: readonly string[];
}

function parseMigrate(args: readonly string[]): MigrateRequest | string {
  const port = parseInt64(args[2]!);
  const db = parseInt64(args[4]!);
  const timeout = parseInt64(args[5]!);
  if (typeof port !== "number" || typeof timeout !== "number" || typeof db !== "number") {
    return REPLY_ERRORS.notInteger;
  }
  if (db !== 0) return REPLY_ERRORS.dbIndex;
  let copy = false;
  let replace = false;
  let keys: string[] = args[3] === "" ? [] : [args[3]!];
  for (let i = 6; i < args.length; i++) {
    const option = args[i]!.toLowerCase();
    if (option === "copy") copy = true;
    else if (option === "replace") replace = true;
    else if (option === "auth" && i + 1 < args.length) i += 1;
    else if (option === "auth2" && i + 2 < args.length) i += 2;
    else if (option === "keys" && args[3] === "") {
      keys = args.slice(i + 1);
      break;
    } else if (option === "keys") {
      return "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string";
    } else return REPLY_ERRORS.syntax;
  }
  const timeoutMs = Math.min(MAX_MIGRATE_TIMEOUT_MS, timeout <= 0 ? DEFAULT_MIGRATE_TIMEOUT_MS : timeout);
  return { host: args[1]!, port, timeoutMs, copy, replace, keys };
}

function migrate(runtime: ClusterRuntime, ctx: CommandContext, args: readonly string[]): void {
  const request = parseMigrate(args);
  if (typeof request === "string") {
    ctx.reply.error(request);
    return;
  }
  const state = runtime.state;
  const target = [...state.nodes()].find((node) => node.host === request.host && node.port === request.port);
  if (target === undefined || target.id === state.myId) {
    ctx.reply.error(
      "IOERR error or timeout connecting to the client: the target is not a member of this cluster",
    );
    return;
  }
  const nowMs = runtime.clock.nowMs();
  const moved: string[] = [];
  const parts = ["RESTORE", state.myId, request.replace ? "1" : "0"];
  for (const key of request.keys) {
    const entry = runtime.keyspace.lookup(key);
    if (entry === undefined) continue;
    const ttlMs = entry.expiresAtMs === NO_EXPIRY ? 0 : Math.max(1, entry.expiresAtMs - nowMs);
    parts.push(key, entry.value, String(ttlMs));
    moved.push(key);
  }
  if (moved.length === 0) {
    ctx.reply.simple("NOKEY");
    return;
  }
  const result = runtime.transfer.send(target.host, target.busPort, encodeFrame(parts), request.timeoutMs);
  if (!result.ok) {
    ctx.reply.error(`IOERR error or timeout writing to target instance: ${result.error}`);
    return;
  }
  if (result.reply[0] !== "RESTORED") {
    ctx.reply.error(result.reply[1] ?? "ERR Target instance replied with an unknown frame");
    return;
  }
  if (!request.copy) for (const key of moved) runtime.keyspace.delete(key);
  ctx.reply.simple("OK");
}

export function migrateCommand(runtime: ClusterRuntime): CommandSpec {
  return {
    name: "migrate",
    arity: -6,
    // Keyless for routing on purpose: the keys' slot is MIGRATING here, and MIGRATE must run on this node.
    flags: ["write"],
    keys: { first: 0, last: 0, step: 0 },
    acl: ["@keyspace", "@write", "@slow", "@dangerous"],
    doc: {
      summary: "Atomically transfers a key from one Redis instance to another.",
      since: "2.6.0",
      group: "generic",
      complexity: "O(N) where N is the number of keys moved.",
    },
    run: (ctx, args) => migrate(runtime, ctx, args),
  };
}
