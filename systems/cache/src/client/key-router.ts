/**
 * What the typed client, cache-aside and the routing proxy need from a routing mode: send a
 * command to the node that owns a key, and say which keys may share one multi-key command.
 * Two modes implement it: `ClusterRouter` (Redis Cluster slots, MOVED/ASK; CA-05..CA-07)
 * and `RingRouter` (a consistent-hashing ring of independent nodes, memcached-style; CA-03).
 *
 * Error replies come back as `ErrorReply` values after the router has handled the ones it
 * understands (redirects, retries); link failures reject.
 *
 * @example
 * async function touch(router: KeyRouter, key: string) {
 *   return router.send(key, ["EXPIRE", key, "300"]);
 * }
 */
import type { WireEncoding } from "./command-encoder.ts";
import type { Reply } from "./reply-parser.ts";

/** What a router did, for metrics and for tests that check the text's sequences (CA-09). */
export type RouterEvent =
  | { readonly type: "send"; readonly address: string; readonly command: string; readonly key: string }
  | { readonly type: "moved"; readonly slot: number; readonly from: string; readonly to: string }
  | { readonly type: "ask"; readonly slot: number; readonly from: string; readonly to: string }
  | {
      readonly type: "retry";
      readonly reason: "tryagain" | "clusterdown" | "connect";
      readonly address: string;
      readonly attempt: number;
    }
  | { readonly type: "refresh"; readonly address: string; readonly ranges: number }
  | { readonly type: "refresh-failed"; readonly reason: string }
  /** Ring mode: `address` failed `failures` times in a row and left this client's routing; a probe follows in `retryAfterMs`. */
  | {
      readonly type: "eject";
      readonly address: string;
      readonly failures: number;
      readonly retryAfterMs: number;
    }
  /** Ring mode: `address` reached the failure limit but is the last routable node, so it stays. */
  | { readonly type: "eject-skipped"; readonly address: string; readonly failures: number }
  /** Ring mode: the PING probe of an ejected node; when it failed, the next one waits `retryAfterMs`. */
  | { readonly type: "probe"; readonly address: string; readonly ok: boolean; readonly retryAfterMs?: number }
  /** Ring mode: a probe answered, `address` routes its keys again. */
  | { readonly type: "readmit"; readonly address: string }
  /** Ring mode: a command for `owner`'s key went to the gutter node `address` (owner ejected, or the link failed). */
  | {
      readonly type: "gutter";
      readonly owner: string;
      readonly address: string;
      readonly command: string;
      readonly key: string;
      readonly reason: "ejected" | "failed";
    };

export interface KeyRouter {
  readonly encoding: WireEncoding;
  /** Sends a command whose keys all belong to `key`'s group to the node that owns `key`. */
  send(key: string, args: readonly string[]): Promise<Reply>;
  /** Keys with the same group may ride one multi-key command (one slot in a cluster, one node on a ring). */
  groupOf(key: string): string;
  /** Nodes the router routes to now (`host:port`). */
  nodes(): readonly string[];
  /** Sends a keyless command (PING, FLUSHALL, INFO) to one node. */
  sendToNode(address: string, args: readonly string[]): Promise<Reply>;
  /** Open connections per node. */
  openConnections(): Map<string, number>;
  close(): Promise<void>;
}
