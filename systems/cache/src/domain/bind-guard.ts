/**
 * No unauthenticated service beyond loopback: a node (or a local cluster) bound to an
 * address other machines can reach must have a password, or it refuses to start. Loopback
 * is 127.0.0.0/8, ::1 (and IPv4-mapped forms) or the name `localhost`; any other name or
 * address — 0.0.0.0 and :: included, they mean every interface — counts as reachable.
 *
 * (Local to the cache for now: a shared check for HTTP services is being added to infra.)
 *
 * @example
 * bindRefusal("0.0.0.0", "");     // "CACHE_HOST=0.0.0.0 is reachable … set CACHE_REQUIREPASS=…"
 * bindRefusal("127.0.0.1", "");   // undefined
 * bindRefusal("0.0.0.0", "s3");   // undefined
 */
import { classifyIp } from "@casebook/kit/address-class";
import { parseIp } from "@casebook/kit/ip-address";

export function isLoopbackHost(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  const ip = parseIp(host);
  return ip !== undefined && classifyIp(ip) === "loopback";
}

/** The one-line reason to refuse binding `host` without a password, or undefined when it is fine. */
export function bindRefusal(
  host: string,
  requirepass: string,
  hostSetting = "CACHE_HOST",
): string | undefined {
  if (requirepass !== "" || isLoopbackHost(host)) return undefined;
  return `${hostSetting}=${host} is reachable from other machines and the cache has no password: set CACHE_REQUIREPASS=<password> (clients then AUTH; ACL SETUSER adds users), or listen on 127.0.0.1`;
}
