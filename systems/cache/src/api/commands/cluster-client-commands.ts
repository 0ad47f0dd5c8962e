/**
 * The per-connection cluster commands: READONLY / READWRITE (CA-17: this client accepts
 * possibly stale reads from replicas), ASKING (the next command may run on a slot being
 * imported, after an -ASK), and ROLE (primary with its replicas' offsets, or replica with
 * its link state and offset).
 *
 * @example
 * // on a replica: READONLY → OK; GET k → the replica's copy instead of -MOVED
 */

import { flagsOf } from "../../cluster/api/cluster-router.ts";
import type { ClusterRuntime } from "../../cluster/workers/cluster-runtime.ts";
import { type CommandContext, type CommandSpec, NO_KEYS } from "./command-spec.ts";

function spec(name: string, summary: string, since: string, run: (ctx: CommandContext) => void): CommandSpec {
  return {
    name,
    arity: name === "role" ? 1 : 1,
    flags: ["loading", "stale", "fast"],
    keys: NO_KEYS,
    acl: ["@keyspace", "@fast"],
    doc: { summary, since, group: name === "role" ? "server" : "cluster", complexity: "O(1)" },
    run,
  };
}

function role(runtime: ClusterRuntime, ctx: CommandContext): void {
  const state = runtime.state;
  const me = state.myself;
  const { reply } = ctx;
  if (me.role === "primary") {
    const replicas = [...runtime.source.replicas()];
    reply.arrayHeader(3);
    reply.bulk("master");
    reply.integer(runtime.source.offset);
    reply.arrayHeader(replicas.length);
    for (const replica of replicas) {
      const node = state.node(replica.id);
      reply.arrayHeader(3);
      reply.bulk(node?.host ?? "?");
      reply.bulk(String(node?.port ?? 0));
      reply.bulk(String(Math.max(0, replica.ackOffset)));
    }
    return;
  }
  const primary = me.primaryId === undefined ? undefined : state.node(me.primaryId);
  const sinkState = runtime.sink.state;
  reply.arrayHeader(5);
  reply.bulk("slave");
  reply.bulk(primary?.host ?? "?");
  reply.integer(primary?.port ?? 0);
  reply.bulk(sinkState === "none" ? "connect" : sinkState);
  reply.integer(runtime.sink.offset);
}

export function clusterClientCommands(runtime: ClusterRuntime): CommandSpec[] {
  return [
    spec(
      "readonly",
      "Enables read-only queries for a connection to a Redis Cluster replica node.",
      "3.0.0",
      (ctx) => {
        flagsOf(ctx.client).readonly = true;
        ctx.reply.simple("OK");
      },
    ),
    spec(
      "readwrite",
      "Enables read-write queries for a connection to a Redis Cluster replica node.",
      "3.0.0",
      (ctx) => {
        flagsOf(ctx.client).readonly = false;
        ctx.reply.simple("OK");
      },
    ),
    spec("asking", "Signals that a cluster client is following an -ASK redirect.", "3.0.0", (ctx) => {
      flagsOf(ctx.client).asking = true;
      ctx.reply.simple("OK");
    }),
    spec("role", "Returns the replication role.", "2.8.12", (ctx) => role(runtime, ctx)),
  ];
}
