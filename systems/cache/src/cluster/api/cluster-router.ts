/**
 * The cluster's dispatch hooks: every command with keys passes `before` (routing,
 * CA-05/07/16/17), every command that ran passes `after` (the replication stream).
 *
 * before, in Redis's order (a keyless write on a replica gets -READONLY): CROSSSLOT → CLUSTERDOWN (no live owner for some slot, or this
 * node lost the majority) → MOVED / ASK / TRYAGAIN → NOREPLICAS for a write on a primary
 * without enough good replicas. Commands without keys (PING, CLUSTER, INFO) run anywhere.
 * The one-shot ASKING flag is cleared by whatever command follows it.
 *
 * after: for a write, the resulting state of each of its keys goes to the replicas
 * (removals were already streamed by the keyspace observer as they happened).
 *
 * Per-connection flags (READONLY, ASKING) live in a WeakMap keyed by the connection's
 * ClientState, so they vanish with the connection.
 *
 * @example
 * const server = new CacheServer({ keyspace, clock, hooks: createClusterRouter(runtime), … });
 * // GET k on a node that does not own k's slot → -MOVED 12739 127.0.0.1:7001
 */
import { keySlot } from "@casebook/kit/cluster-slot";
import type { ClientState, CommandContext, CommandSpec } from "../../api/commands/command-spec.ts";
import { commandKeys } from "../../api/commands/command-spec.ts";
import type { DispatchHooks } from "../../api/commands/command-table.ts";
import { CROSS_SLOT, type RouteDecision, routeCommand } from "../domain/cluster-routing.ts";
import type { ClusterRuntime } from "../workers/cluster-runtime.ts";
import { askError, CLUSTER_REPLIES, movedError } from "./cluster-replies.ts";

export interface ClientClusterFlags {
  /** READONLY: this client accepts possibly stale reads from a replica. */
  readonly: boolean;
  /** ASKING: the next command may run on an importing slot. */
  asking: boolean;
}

const clientFlags = new WeakMap<ClientState, ClientClusterFlags>();

/** The cluster flags of a connection, created on first use. */
export function flagsOf(client: ClientState): ClientClusterFlags {
  let flags = clientFlags.get(client);
  if (flags === undefined) {
    flags = { readonly: false, asking: false };
    clientFlags.set(client, flags);
  }
  return flags;
}

function isWrite(spec: CommandSpec): boolean {
  return spec.flags.includes("write");
}

/** The one slot of all keys, or CROSS_SLOT. */
function slotOfKeys(keys: readonly string[]): number {
  const slot = keySlot(keys[0]!);
  for (let i = 1; i < keys.length; i++) if (keySlot(keys[i]!) !== slot) return CROSS_SLOT;
  return slot;
}

function redirect(runtime: ClusterRuntime, decision: RouteDecision): string {
  const counts = runtime.redirects;
  switch (decision.kind) {
    case "crossslot":
      counts.crossslot += 1;
      return CLUSTER_REPLIES.crossSlot;
    case "tryagain":
      counts.tryagain += 1;
      return CLUSTER_REPLIES.tryAgain;
    case "unbound":
      counts.down += 1;
      return CLUSTER_REPLIES.unbound;
    case "moved":
    case "ask": {
      const address = runtime.addressOf(decision.nodeId);
      if (address === undefined) return CLUSTER_REPLIES.down;
      counts[decision.kind] += 1;
      const format = decision.kind === "moved" ? movedError : askError;
      return format(decision.slot, address.host, address.port);
    }
    case "serve":
      throw new Error("redirect() called for a command that is served here");
  }
}

export function createClusterRouter(runtime: ClusterRuntime): DispatchHooks {
  const { keyspace } = runtime;
  return {
    before(ctx: CommandContext, spec: CommandSpec, args: readonly string[]): boolean {
      const flags = clientFlags.get(ctx.client);
      const asking = flags?.asking === true;
      if (flags !== undefined && spec.name !== "asking") flags.asking = false;
      const keys = spec.keys.first === 0 ? [] : commandKeys(spec, args);
      if (keys.length === 0) {
        // FLUSHALL on a replica would fork its data from the primary's: replicas are read-only.
        if (isWrite(spec) && runtime.started && runtime.state.myself.role === "replica") {
          ctx.reply.error(CLUSTER_REPLIES.readOnlyReplica);
          return false;
        }
        return true;
      }
      const slot = slotOfKeys(keys);
      const down = slot === CROSS_SLOT ? undefined : runtime.servingError();
      if (down !== undefined) {
        runtime.redirects.down += 1;
        ctx.reply.error(down);
        return false;
      }
      const write = isWrite(spec);
      const decision = routeCommand(runtime.state, {
        slot,
        keyCount: keys.length,
        asking,
        readonlyClient: flags?.readonly === true,
        readOnlyCommand: !write,
        countMissing: () => keys.filter((key) => keyspace.lookup(key) === undefined).length,
      });
      if (decision.kind !== "serve") {
        ctx.reply.error(redirect(runtime, decision));
        return false;
      }
      const refusal = write && runtime.state.myself.role === "primary" ? runtime.writeError() : undefined;
      if (refusal !== undefined) {
        runtime.redirects.noreplicas += 1;
        ctx.reply.error(refusal);
        return false;
      }
      return true;
    },

    after(_ctx: CommandContext, spec: CommandSpec, args: readonly string[]): void {
      const { source } = runtime;
      if (!source.active || !isWrite(spec)) return;
      for (const key of commandKeys(spec, args)) {
        const entry = keyspace.lookup(key);
        if (entry !== undefined) source.propagateSet(key, entry.value, entry.expiresAtMs);
      }
    },
  };
}
