/**
 * Keep-alive connection pools for streamed calls (`OutboundClient.stream`), one undici `Pool`
 * per origin, bounded as `agent-pool.ts` bounds node:http's agents: sockets per origin, idle
 * sockets closed after a while, and origins (`origin-lru.ts`) — the least recently used pool
 * with nothing in flight is closed when a new origin would pass the bound.
 *
 * Why undici here and node:http for buffered calls: a streamed call is the LLM gateway's hot
 * path, and undici's client costs about half of node:http's per exchange (≈ 45 against ≈ 90 µs
 * of CPU for a small SSE answer over a kept-alive socket, measured on this machine); buffered
 * calls report the socket's remote address and reuse (the webhook log records both), which
 * undici's dispatcher does not expose. Each pool bounds only its own sockets, so a client that
 * both streams and buffers to one origin may hold up to twice `maxSocketsPerOrigin` there.
 *
 * Every timeout is the outbound client's own (its phase timer, the stream's idle bound): the
 * pool's headers and body timeouts are off, its connect timeout is the client's connect phase.
 *
 * @example
 * const pools = new DispatcherPool({ maxOrigins: 16, maxSocketsPerOrigin: 512, idleSocketTimeoutMs: 4_000, connectTimeoutMs: 5_000, maxHeaderBytes: 16_384 });
 * pools.poolFor(new URL("http://127.0.0.1:8101/v1/chat/completions")).dispatch(options, handler);
 * pools.close();
 */
import type { LookupFunction } from "node:net";
import { Pool } from "undici";
import type { AgentPoolOptions } from "./agent-pool.ts";
import { OriginLru } from "./origin-lru.ts";

export interface DispatcherPoolOptions extends AgentPoolOptions {
  /** TCP (and TLS) connect bound of a new socket; the client's connect phase also covers the wait for one. */
  connectTimeoutMs: number;
  /** Response head bytes accepted. */
  maxHeaderBytes: number;
  /** The address guard's lookup (every address checked, the connection pinned to it), if any. */
  lookup?: LookupFunction;
}

export class DispatcherPool {
  readonly #pools: OriginLru<Pool>;

  constructor(options: DispatcherPoolOptions) {
    for (const name of ["maxSocketsPerOrigin", "idleSocketTimeoutMs", "maxHeaderBytes"] as const) {
      if (!Number.isSafeInteger(options[name]) || options[name] < 1)
        throw new RangeError(`${name} must be >= 1`);
    }
    const { lookup, ca, connectTimeoutMs } = options;
    this.#pools = new OriginLru({
      maxOrigins: options.maxOrigins,
      open: (origin) =>
        new Pool(origin, {
          connections: options.maxSocketsPerOrigin,
          pipelining: 1,
          keepAliveTimeout: options.idleSocketTimeoutMs,
          keepAliveMaxTimeout: options.idleSocketTimeoutMs,
          headersTimeout: 0,
          bodyTimeout: 0,
          maxHeaderSize: options.maxHeaderBytes,
          connect: {
            timeout: Math.ceil(connectTimeoutMs),
            ...(lookup === undefined ? {} : { lookup }),
            ...(ca === undefined ? {} : { ca }),
          },
        }),
      busy: (pool) => {
        const { running, pending, queued } = pool.stats;
        return running + pending + queued > 0;
      },
      close: (pool) => void pool.close().catch(() => {}),
      destroy: (pool) => void pool.destroy().catch(() => {}),
    });
  }

  /** The pool for `url`'s origin, created on first use. */
  poolFor(url: URL): Pool {
    return this.#pools.for(url);
  }

  /** Origins holding a pool now. */
  get size(): number {
    return this.#pools.size;
  }

  /** Closes every pool and its sockets, in-flight calls failing. */
  close(): void {
    this.#pools.destroyAll();
  }
}
