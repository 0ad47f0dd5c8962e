/**
 * Where a command with keys runs (Redis's getNodeByQuery): here, or a redirect.
 *
 * - All keys must hash to one slot, else CROSSSLOT (CA-07): a node runs a command alone,
 *   and a multi-key command on keys of two nodes cannot be atomic. Hash tags put related
 *   keys in one slot on purpose.
 * - The slot's owner serves it; any other node answers `-MOVED slot host:port` (CA-05) and
 *   the client updates its map — except a replica of the owner, for a read, on a client
 *   that sent READONLY (CA-17: stale reads accepted in exchange for load off the primary).
 * - During a live reshard (MIGRATING on the source, IMPORTING on the target) a key that
 *   is no longer on the source gets `-ASK slot target`: ask there once (ASKING), do not
 *   update the map, because the slot still belongs to the source. A multi-key command with
 *   some keys on each side gets -TRYAGAIN until the migration of those keys is over.
 *
 * @example
 * routeCommand(state, { slot: 42, keyCount: 1, asking: false, readonlyClient: false,
 *   readOnlyCommand: true, countMissing: () => 0 }); // { kind: "moved", slot: 42, nodeId: "…" }
 */

/** What routing reads of the cluster view (ClusterState satisfies it). */
export interface RoutingView {
  readonly myId: string;
  readonly myself: { readonly role: "primary" | "replica"; readonly primaryId: string | undefined };
  owner(slot: number): string | undefined;
  readonly migrating: ReadonlyMap<number, string>;
  readonly importing: ReadonlyMap<number, string>;
}

export interface RouteQuery {
  /** The one slot of every key, or CROSS_SLOT. */
  readonly slot: number;
  readonly keyCount: number;
  /** The client sent ASKING just before this command. */
  readonly asking: boolean;
  /** The client sent READONLY on this connection. */
  readonly readonlyClient: boolean;
  /** The command only reads (no "write" flag). */
  readonly readOnlyCommand: boolean;
  /** Keys of the command absent here; called only while the slot migrates or imports. */
  countMissing(): number;
}

export type RouteDecision =
  | { readonly kind: "serve" }
  | { readonly kind: "moved"; readonly slot: number; readonly nodeId: string }
  | { readonly kind: "ask"; readonly slot: number; readonly nodeId: string }
  | { readonly kind: "tryagain" }
  | { readonly kind: "crossslot" }
  | { readonly kind: "unbound"; readonly slot: number };

/** `RouteQuery.slot` when the keys hash to different slots. */
export const CROSS_SLOT = -1;

const SERVE: RouteDecision = Object.freeze({ kind: "serve" });
const TRYAGAIN: RouteDecision = Object.freeze({ kind: "tryagain" });
const CROSSSLOT: RouteDecision = Object.freeze({ kind: "crossslot" });

export function routeCommand(view: RoutingView, query: RouteQuery): RouteDecision {
  const { slot } = query;
  if (slot === CROSS_SLOT) return CROSSSLOT;
  const owner = view.owner(slot);
  if (owner === undefined) return { kind: "unbound", slot };
  const migratingTo = owner === view.myId ? view.migrating.get(slot) : undefined;
  const importing = view.importing.has(slot);
  if (migratingTo !== undefined || importing) {
    const missing = query.countMissing();
    if (migratingTo !== undefined && missing > 0) {
      // Some keys here, some gone: no node holds them all until the move of those keys ends.
      return missing < query.keyCount ? TRYAGAIN : { kind: "ask", slot, nodeId: migratingTo };
    }
    if (importing && query.asking) return query.keyCount > 1 && missing > 0 ? TRYAGAIN : SERVE;
  }
  if (owner === view.myId) return SERVE;
  const me = view.myself;
  if (query.readonlyClient && query.readOnlyCommand && me.role === "replica" && me.primaryId === owner) {
    return SERVE;
  }
  return { kind: "moved", slot, nodeId: owner };
}
