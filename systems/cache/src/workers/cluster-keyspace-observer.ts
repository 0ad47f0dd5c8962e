/**
 * Connects the keyspace to the cluster layer: every key added or removed updates the
 * per-slot index (GETKEYSINSLOT, COUNTKEYSINSLOT, full sync), and every removal —
 * a DEL, an expiry, an eviction, a MIGRATE — and every flush goes into the replication
 * stream while this node is a primary, so replicas never expire or evict on their own.
 *
 * @example
 * const slotIndex = new SlotIndex();
 * const observer = clusterKeyspaceObserver(slotIndex, () => runtime?.source);
 * const keyspace = new Keyspace({ clock, random, observer });
 */
import type { KeyspaceObserver } from "../domain/keyspace.ts";
import type { SlotIndex } from "../domain/slot-index.ts";
import type { ReplicationSource } from "./replication-primary.ts";

export function clusterKeyspaceObserver(
  slotIndex: SlotIndex,
  source: () => ReplicationSource | undefined,
): KeyspaceObserver {
  return {
    added: (key) => slotIndex.add(key),
    removed: (key) => {
      slotIndex.remove(key);
      source()?.propagateDelete(key);
    },
    flushed: () => {
      slotIndex.clear();
      source()?.propagateFlush();
    },
  };
}
