/**
 * FS-14's edge layers in front of the public API, best effort and never the inventory
 * barrier (the reserve script and the UNIQUE per ticket are):
 *
 * - a per-IP limit on every /v1/sales and /v1/holds call: the rate-limiter system's public
 *   API (`POST {RATE_LIMITER_URL}/v1/check`, descriptor `ip`) when configured, else a local
 *   token bucket per IP (bounded: the oldest IP's bucket is dropped past `maxIps`); over it,
 *   429 `EDGE_RATE_LIMITED` with Retry-After. A rate limiter that cannot be reached lets the
 *   request through (fail open: the limit is best effort, the counter still decides);
 * - a proof of work before join (domain/join-challenge.ts), when `powBits` > 0.
 *
 * @example
 * registerEdgeGuard(app, { limiter: new LocalIpLimiter({ ratePerS: 20, burst: 40, maxIps: 100_000, clock }) });
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { Clock } from "@casebook/kit/clock";
import { TokenBucket } from "@casebook/kit/token-bucket";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";

export interface IpLimiter {
  /** 0 when the request may go now, else the ms until it may. */
  check(ip: string): Promise<number>;
}

/** One token bucket per client IP, in this process; bounded by `maxIps`. */
export class LocalIpLimiter implements IpLimiter {
  readonly #o: { ratePerS: number; burst: number; maxIps: number; clock: Clock };
  readonly #buckets = new Map<string, TokenBucket>();

  constructor(options: { ratePerS: number; burst: number; maxIps: number; clock: Clock }) {
    this.#o = options;
  }

  async check(ip: string): Promise<number> {
    const nowMs = this.#o.clock.monotonicMs();
    let bucket = this.#buckets.get(ip);
    if (bucket === undefined) {
      // Map order is insertion order: the first key is the IP seen longest ago.
      if (this.#buckets.size >= this.#o.maxIps) this.#buckets.delete(this.#buckets.keys().next().value!);
      bucket = new TokenBucket({ capacity: this.#o.burst, ratePerS: this.#o.ratePerS, nowMs });
      this.#buckets.set(ip, bucket);
    }
    return bucket.take(nowMs);
  }
}

/** The rate-limiter system's public HTTP API (never its code). Fails open. */
export class RateLimiterIpLimiter implements IpLimiter {
  readonly #url: string;
  readonly #token: string | undefined;
  readonly #http: OutboundClient;
  readonly #onError: (error: unknown) => void;

  constructor(options: {
    url: string;
    token?: string;
    timeoutMs: number;
    onError: (error: unknown) => void;
  }) {
    this.#url = options.url.replace(/\/$/, "");
    this.#token = options.token;
    this.#onError = options.onError;
    const t = options.timeoutMs;
    this.#http = new OutboundClient({
      addressGuard: "off",
      timeouts: { connectMs: t, headersMs: t, bodyMs: t },
    });
  }

  async check(ip: string): Promise<number> {
    try {
      const res = await this.#http.request({
        method: "POST",
        url: `${this.#url}/v1/check`,
        headers: {
          "content-type": "application/json",
          ...(this.#token === undefined ? {} : { authorization: `Bearer ${this.#token}` }),
        },
        body: JSON.stringify({ descriptors: { ip } }),
      });
      const json = JSON.parse(res.body.toString("utf8")) as { allowed?: boolean; retryAfterMs?: number };
      if (res.status !== 200 || json.allowed !== false) return 0;
      return Math.max(1, json.retryAfterMs ?? 1_000);
    } catch (error) {
      this.#onError(error);
      return 0;
    }
  }

  close(): void {
    this.#http.close();
  }
}

/** Routes the limit covers: the public API a crowd hits (not operations, not admin, not the page). */
const LIMITED = /^\/v1\/(sales|holds)\//;

export function registerEdgeGuard(app: FastifyInstance, options: { limiter: IpLimiter }): void {
  app.addHook("onRequest", async (request, reply) => {
    if (!LIMITED.test(request.url)) return;
    const waitMs = await options.limiter.check(request.ip);
    if (waitMs <= 0) return;
    reply.header("retry-after", String(Math.ceil(waitMs / 1000)));
    throw errors.create("EDGE_RATE_LIMITED", { fields: { retryAfterMs: Math.ceil(waitMs) } });
  });
}
