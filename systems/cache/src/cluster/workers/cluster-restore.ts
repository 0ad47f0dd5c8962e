/**
 * The target side of MIGRATE (Redis's RESTORE-ASKING): a `RESTORE <from> <replace>
 * key value ttlMs …` frame from a migrating source. Checked whole before any key is
 * written: every key's slot must be ours or importing, and without REPLACE none may
 * exist. Each restored key is streamed to this node's replicas, then `RESTORED <n>`
 * tells the source it may delete its copies.
 *
 * @example
 * restoreKeys(runtime, link, ["RESTORE", sourceId, "1", "k", "v", "0"]); // → RESTORED 1
 */

import type { Clock } from "@casebook/kit/clock";
import { keySlot } from "@casebook/kit/cluster-slot";
import { NO_EXPIRY } from "../../domain/cache-entry.ts";
import type { Keyspace } from "../../domain/keyspace.ts";
import type { ReplicationSource } from "../../replication/workers/replication-primary.ts";
import type { BusLink, Frame } from "../api/cluster-bus-link.ts";
import { CLUSTER_REPLIES } from "../api/cluster-replies.ts";
import type { ClusterState } from "../domain/cluster-state.ts";

/** What a restore needs of the node (the small interface, not the whole runtime). `ClusterRuntime` is one. */
export interface RestoreContext {
  readonly state: ClusterState;
  readonly keyspace: Keyspace;
  readonly clock: Clock;
  /** Each restored key goes to this node's replicas too. */
  readonly source: Pick<ReplicationSource, "propagateSet">;
}

/** Why the frame cannot be restored, or undefined when every key may be written. */
function refusal(runtime: RestoreContext, replace: boolean, entries: readonly string[]): string | undefined {
  const state = runtime.state;
  if (entries.length % 3 !== 0) return "ERR RESTORE frame has a partial key";
  for (let i = 0; i < entries.length; i += 3) {
    const key = entries[i]!;
    const slot = keySlot(key);
    if (state.owner(slot) !== state.myId && !state.importing.has(slot)) {
      return `ERR slot ${slot} is neither served nor imported by this node`;
    }
    if (!replace && runtime.keyspace.lookup(key) !== undefined) return CLUSTER_REPLIES.busyKey;
    const ttlMs = Number(entries[i + 2]);
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 0) return "ERR RESTORE frame has an invalid TTL";
  }
  return undefined;
}

export function restoreKeys(runtime: RestoreContext, link: BusLink, frame: Frame): void {
  const replace = frame[2] === "1";
  const entries = frame.slice(3);
  const refused = refusal(runtime, replace, entries);
  if (refused !== undefined) {
    link.send(["ERR", refused]);
    return;
  }
  const nowMs = runtime.clock.nowMs();
  let restored = 0;
  for (let i = 0; i < entries.length; i += 3) {
    const key = entries[i]!;
    const value = entries[i + 1]!;
    const ttlMs = Number(entries[i + 2]);
    const expiresAtMs = ttlMs > 0 ? nowMs + ttlMs : NO_EXPIRY;
    if (!runtime.keyspace.set(key, value, expiresAtMs)) {
      link.send(["ERR", `OOM command not allowed when used memory > 'maxmemory' (restored ${restored})`]);
      return;
    }
    runtime.source.propagateSet(key, value, expiresAtMs);
    restored += 1;
  }
  link.send(["RESTORED", String(restored)]);
}
