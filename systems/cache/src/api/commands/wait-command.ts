/**
 * WAIT numreplicas timeout: blocks the client until `numreplicas` replicas acknowledged
 * every write made before it, or until `timeout` ms pass (0 = no limit), and answers
 * how many did. Replication stays asynchronous (CA-14): WAIT does not make a write
 * synchronous, it tells the client whether its write reached replicas, so a client that
 * needs a write to survive a failover can wait for it (the write is still applied on the
 * primary when WAIT answers fewer).
 *
 * The offset waited for is the primary's offset when WAIT runs: it covers every write
 * this connection made before (and maybe others'), which is what Redis promises.
 *
 * @example
 * // SET k v → OK; WAIT 1 500 → :1 once a replica acknowledged the SET (or :0 after 500 ms)
 */

import { parseInt64 } from "../../domain/integer-arg.ts";
import { REPLY_ERRORS } from "../../domain/reply-errors.ts";
import type { CommandContext, CommandSpec } from "./command-spec.ts";

export const WAIT_REPLIES = {
  negativeTimeout: "ERR timeout is negative",
  onReplica: "ERR WAIT cannot be used with replica instances.",
} as const;

/** A whole number ≥ 0 that fits a JS number, or undefined (WAIT answers the integer error). */
function countArg(text: string): number | undefined {
  const value = parseInt64(text);
  return typeof value === "number" ? value : undefined;
}

function waitCommandRun(ctx: CommandContext, args: readonly string[]): void {
  const needed = countArg(args[1]!);
  const timeoutMs = countArg(args[2]!);
  if (needed === undefined || timeoutMs === undefined) {
    ctx.reply.error(REPLY_ERRORS.notInteger);
    return;
  }
  if (timeoutMs < 0) {
    ctx.reply.error(WAIT_REPLIES.negativeTimeout);
    return;
  }
  const source = ctx.node.replication;
  if (source === undefined) {
    // A standalone node has no replicas: none acknowledged anything.
    ctx.reply.integer(0);
    return;
  }
  if (!source.active) {
    ctx.reply.error(WAIT_REPLIES.onReplica);
    return;
  }
  const offset = source.offset;
  const now = source.acknowledged(offset);
  if (now >= needed) {
    ctx.reply.integer(now);
    return;
  }
  const wait = source.waitForAcks(offset, needed, timeoutMs);
  ctx.client.blocked = {
    settled: wait.settled.then((acknowledged) => (reply) => reply.integer(acknowledged)),
    cancel: wait.cancel,
  };
}

export const waitCommand: CommandSpec = {
  name: "wait",
  arity: 3,
  flags: ["noscript"],
  keys: { first: 0, last: 0, step: 0 },
  acl: ["@slow", "@connection"],
  doc: {
    summary:
      "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed.",
    since: "3.0.0",
    group: "generic",
    complexity: "O(1)",
  },
  run: waitCommandRun,
};
