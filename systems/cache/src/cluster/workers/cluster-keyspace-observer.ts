/**
 * Connects the keyspace to the cluster's replication: every removal — a DEL, an expiry, an
 * eviction, a MIGRATE — and every flush goes into the replication stream while this node is
 * a primary, so replicas never expire or evict on their own. (The per-slot index that
 * GETKEYSINSLOT, COUNTKEYSINSLOT and full syncs read is the keyspace's own, `keyspace.slotIndex`.)
 *
 * @example
 * const observer = clusterKeyspaceObserver(() => runtime?.source);
 * const keyspace = new Keyspace({ clock, random, observer });
 */
import type { KeyspaceObserver } from "../../domain/keyspace.ts";
import type { ReplicationSource } from "../../replication/workers/replication-primary.ts";

export function clusterKeyspaceObserver(source: () => ReplicationSource | undefined): KeyspaceObserver {
  return {
    removed: (key) => source()?.propagateDelete(key),
    flushed: () => source()?.propagateFlush(),
  };
}
