/**
 * Redis Cluster's redirect and retry replies, read as decisions (CA-05, CA-06):
 *
 * - `-MOVED 3999 10.0.1.17:6379`: slot 3999 lives elsewhere for good; update the slot map
 *   and retry there.
 * - `-ASK 3999 10.0.1.17:6379`: the slot is migrating and this key has already left;
 *   retry once at the target after `ASKING`, and do NOT update the map (the slot still
 *   belongs to the source until the migration ends).
 * - `-TRYAGAIN …`: a multi-key command met a half-migrated slot; retry shortly.
 * - `-CLUSTERDOWN …`: the cluster cannot serve the slot right now (failover in progress);
 *   refresh the map and retry shortly.
 *
 * Redis 7 may announce an empty host (`-MOVED 3999 :6380`), meaning "the host you are
 * talking to": the caller passes the replying node's host to fill it in.
 *
 * @example
 * parseRedirect("MOVED 3999 127.0.0.1:7002", "127.0.0.1"); // { kind: "moved", slot: 3999, address: "127.0.0.1:7002" }
 * parseRedirect("ASK 12 :7003", "127.0.0.1");               // { kind: "ask", slot: 12, address: "127.0.0.1:7003" }
 * retryKind("CLUSTERDOWN The cluster is down");             // "clusterdown"
 */

export interface ClusterRedirect {
  readonly kind: "moved" | "ask";
  readonly slot: number;
  /** `host:port` of the node to retry at. */
  readonly address: string;
}

const REDIRECT = /^(MOVED|ASK) (\d{1,5}) (\S*):(\d{1,5})$/;

/** The redirect an error line carries, or undefined when it is not one. */
export function parseRedirect(errorLine: string, replyingHost: string): ClusterRedirect | undefined {
  const match = REDIRECT.exec(errorLine);
  if (match === null) return undefined;
  const slot = Number(match[2]);
  const port = Number(match[4]);
  if (slot > 16_383 || port < 1 || port > 65_535) return undefined;
  const host = match[3] === "" ? replyingHost : match[3]!;
  return { kind: match[1] === "MOVED" ? "moved" : "ask", slot, address: `${host}:${port}` };
}

/** `tryagain` / `clusterdown` when the error line asks for a delayed retry, else undefined. */
export function retryKind(errorLine: string): "tryagain" | "clusterdown" | undefined {
  if (errorLine.startsWith("TRYAGAIN")) return "tryagain";
  if (errorLine.startsWith("CLUSTERDOWN")) return "clusterdown";
  return undefined;
}

/** What a cluster client does with an error line: follow a redirect, wait and retry, or neither. */
export type ClusterReplyAction = ClusterRedirect | { readonly kind: "tryagain" | "clusterdown" };

/**
 * The action an error line calls for, or undefined when it is an ordinary error for the caller.
 *
 * @example
 * redirectAction("MOVED 1 127.0.0.1:7001", "127.0.0.1"); // { kind: "moved", slot: 1, address: "127.0.0.1:7001" }
 * redirectAction("TRYAGAIN Multiple keys request during rehashing of slot", "127.0.0.1"); // { kind: "tryagain" }
 * redirectAction("ERR syntax error", "127.0.0.1"); // undefined
 */
export function redirectAction(errorLine: string, replyingHost: string): ClusterReplyAction | undefined {
  const redirect = parseRedirect(errorLine, replyingHost);
  if (redirect !== undefined) return redirect;
  const retry = retryKind(errorLine);
  return retry === undefined ? undefined : { kind: retry };
}
