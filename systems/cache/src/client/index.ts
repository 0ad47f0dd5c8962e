/**
 * The cache's client library, as other code imports it: `@casebook/cache/client` (the one
 * part of a system another system may import; it speaks only the RESP protocol). A client
 * for one node, a Redis Cluster or a consistent-hash ring; cache-aside on top of it with
 * TTL jitter, request coalescing, a stampede lease and XFetch.
 *
 * @example
 * import { CacheAside, CacheClient } from "@casebook/cache/client";
 * const client = await CacheClient.cluster({ seeds: ["127.0.0.1:7000"] });
 * const pages = new CacheAside<EventPage>({ client, ttlS: 300, jitter: 0.1 });
 * const page = await pages.getOrLoad("event:42", () => db.eventPage(42));
 */
export {
  CacheAside,
  type CacheAsideOptions,
  type CacheAsideStats,
  type Codec,
  jsonCodec,
} from "./cache-aside.ts";
export { CacheClient, type CacheClientOptions, type SetOptions } from "./cache-client.ts";
export { type ClientErrorCode, clientErrors } from "./client-errors.ts";
export { type LeaseOptions, StampedeLease } from "./stampede-lease.ts";
