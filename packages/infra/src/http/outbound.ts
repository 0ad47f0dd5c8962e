/**
 * Outbound HTTP for every system (issue 10; lifted from webhooks' sender, the most complete
 * of three copies): one request/response exchange — over node:http(s) for a buffered call,
 * over undici's pool for a streamed one (`dispatcher-pool.ts` says why) — with
 *
 * - a timeout per phase — connect (DNS, TCP, TLS, a wait for a pooled socket), headers
 *   (request sent → response head), body (head → last byte) — and an error typed by phase
 *   (`outbound-errors.ts`, undici's model), because the phase decides what a failure
 *   means: nothing sent, or sent with an unknown outcome;
 * - an overall deadline on top (optional, per client or per call) and the caller's
 *   AbortSignal, both ending the exchange in whatever phase it is;
 * - bounds on bytes: the request body (refused before sending), the response head, and
 *   the response body (an error, or — `responseOverflow: "truncate"` — a truncated
 *   response; reading stops either way and the connection is dropped);
 * - keep-alive connections, one pool per origin, bounded in sockets and origins
 *   (`agent-pool.ts`, `dispatcher-pool.ts`);
 * - the SSRF address guard (`address-guard.ts`) when the client calls URLs someone else
 *   supplied, or `"off"` for a configured internal URL. The choice is required: no client
 *   gets it by default, either way.
 *
 * Redirects are never followed (a 3xx is the answer: following one would bypass the guard
 * and send the request somewhere nobody configured). Any status resolves; only "no
 * complete response" rejects.
 *
 * @example
 * const client = new OutboundClient({ addressGuard: "off", timeouts: { connectMs: 1_000, headersMs: 2_000, bodyMs: 1_000 } });
 * const res = await client.request({ method: "POST", url: "http://127.0.0.1:8105/v1/authorizations", body: JSON.stringify(input),
 *   headers: { "content-type": "application/json" }, signal });
 * res.status; res.body.toString("utf8"); res.timings.headersMs;
 * // on failure: outboundErrors.is(error, "OUTBOUND_HEADERS_TIMEOUT"), error.fields.phase === "headers"
 * client.close();
 */
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction, Socket } from "node:net";
import { type Clock, systemClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import { type AddressGuardOptions, checkUrlHost, guardedLookup } from "./address-guard.ts";
import { AgentPool } from "./agent-pool.ts";
import { dispatchStream, type OutboundStream } from "./dispatched-stream.ts";
import { DispatcherPool } from "./dispatcher-pool.ts";
import { outboundErrors, phaseTimeout, transportFailure } from "./outbound-errors.ts";
import { type PhaseTimeouts, PhaseTimer, type PhaseTimings } from "./phase-timer.ts";

export type { OutboundStream } from "./dispatched-stream.ts";
export type { PhaseTimeouts, PhaseTimings } from "./phase-timer.ts";

export const DEFAULT_OUTBOUND_TIMEOUTS: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 5_000,
  headersMs: 15_000,
  bodyMs: 5_000,
});
/** Response body bytes read before the call fails (or is truncated). */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
/** Request body bytes sent at most. */
export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;
/** Response head size Node accepts, stated rather than inherited. */
export const DEFAULT_MAX_RESPONSE_HEADER_BYTES = 16 * 1024;

export interface OutboundPoolOptions {
  /** Origins holding a keep-alive agent at once; the least recently used idle one goes. */
  maxOrigins: number;
  /** Sockets per origin; more requests wait in the agent, under the connect timeout. */
  maxSocketsPerOrigin: number;
  /** Idle keep-alive sockets close after this (below the server's keep-alive timeout). */
  idleSocketTimeoutMs: number;
}

export interface OutboundClientOptions {
  /**
   * The SSRF guard (user-supplied URLs: every address checked, the connection pinned to
   * it), or "off" for a configured URL (an internal service). Required on purpose.
   */
  addressGuard: Omit<AddressGuardOptions, "onChecked"> | "off";
  timeouts?: Partial<PhaseTimeouts>;
  /** Bound on a whole call, all phases; each call may set its own. Default: none beyond the phases. */
  deadlineMs?: number;
  /** Response body bytes read. Default 1 MiB. */
  maxResponseBytes?: number;
  /** Past `maxResponseBytes`: fail with OUTBOUND_RESPONSE_TOO_LARGE (default), or resolve truncated. */
  responseOverflow?: "error" | "truncate";
  /** Response body bytes kept in `body` (the rest is counted, not kept). Default: maxResponseBytes. */
  keptResponseBytes?: number;
  /** Request body bytes sent at most. Default 1 MiB. */
  maxRequestBytes?: number;
  maxResponseHeaderBytes?: number;
  pool?: Partial<OutboundPoolOptions>;
  /** Extra CAs for https (tests with a self-signed server). */
  ca?: string | Buffer;
  /** Sent as User-Agent unless the call sets one. */
  userAgent?: string;
  clock?: Clock;
}

export interface OutboundRequest {
  method: string;
  url: string | URL;
  headers?: OutgoingHttpHeaders;
  /** Sent with its Content-Length. */
  body?: string | Uint8Array;
  /** Aborts the call in whatever phase it is: OUTBOUND_ABORTED, cause the signal's reason. */
  signal?: AbortSignal;
  /** This call's overall deadline, instead of the client's. */
  deadlineMs?: number;
}

export interface OutboundResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  /** The body read (up to keptResponseBytes). */
  readonly body: Buffer;
  /** Bytes read; when truncated, the bound at which reading stopped. */
  readonly bodyBytes: number;
  readonly bodyTruncated: boolean;
  readonly durationMs: number;
  readonly timings: PhaseTimings;
  readonly remoteAddress: string | undefined;
  readonly reusedSocket: boolean;
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) throw new RangeError(`${name} must be > 0, got ${value}`);
  return value;
}

function targetOf(input: string | URL): URL {
  let url: URL;
  try {
    url = typeof input === "string" ? new URL(input) : input;
  } catch {
    throw outboundErrors.create("OUTBOUND_URL_INVALID", {
      fields: { phase: "policy", reason: "not an absolute URL" },
    });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw outboundErrors.create("OUTBOUND_URL_INVALID", {
      fields: { phase: "policy", reason: `scheme ${url.protocol} is not http(s)` },
    });
  }
  return url;
}

/** Header values as text (a number becomes its decimal form); unset ones left out. */
function headerStrings(headers: OutgoingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = typeof value === "number" ? String(value) : value;
  }
  return out;
}

function bytesOf(body: string | Uint8Array | undefined): Buffer | undefined {
  if (body === undefined || Buffer.isBuffer(body)) return body;
  return typeof body === "string"
    ? Buffer.from(body)
    : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
}

/** One state per exchange: what settle, the timers and the abort listener share. */
interface Exchange {
  readonly url: URL;
  readonly host: string;
  readonly timer: PhaseTimer;
  settled: boolean;
  /** Called once, on the first outcome; clears every timer and listener. */
  readonly finish: () => void;
}

/** What a response handler of `#exchange` gets: the exchange, its outcome functions and its start. */
interface Call<T> {
  readonly ex: Exchange;
  readonly settle: () => boolean;
  readonly fail: (error: CasebookError) => void;
  readonly resolve: (value: T) => void;
  readonly startedAtMs: number;
  readonly reused: boolean;
}

export interface OutboundStreamRequest extends OutboundRequest {
  /** The longest silence between two body chunks before the stream fails (OUTBOUND_BODY_TIMEOUT). */
  idleMs: number;
  /** Body bytes read at most before the stream fails (OUTBOUND_RESPONSE_TOO_LARGE). */
  maxStreamBytes: number;
}

/**
 * An outbound HTTP client: phase timeouts, typed errors, byte bounds, pooled keep-alive
 * connections, and the address guard when its URLs come from users.
 *
 * @example
 * const hooks = new OutboundClient({ addressGuard: { policy: createAddressPolicy() }, responseOverflow: "truncate" });
 * const res = await hooks.request({ method: "POST", url: endpointUrl, body, headers });
 */
export class OutboundClient {
  readonly timeouts: Readonly<PhaseTimeouts>;
  readonly #clock: Clock;
  readonly #deadlineMs: number | undefined;
  readonly #maxResponseBytes: number;
  readonly #keptResponseBytes: number;
  readonly #overflow: "error" | "truncate";
  readonly #maxRequestBytes: number;
  readonly #maxHeaderBytes: number;
  readonly #agents: AgentPool;
  readonly #streamPools: DispatcherPool;
  readonly #guard: Omit<AddressGuardOptions, "onChecked"> | undefined;
  readonly #lookup: LookupFunction | undefined;
  readonly #userAgent: string | undefined;

  constructor(options: OutboundClientOptions) {
    this.#clock = options.clock ?? systemClock;
    const timeouts = { ...DEFAULT_OUTBOUND_TIMEOUTS, ...options.timeouts };
    for (const [name, ms] of Object.entries(timeouts)) positive(`timeouts.${name}`, ms);
    this.timeouts = Object.freeze(timeouts);
    this.#deadlineMs =
      options.deadlineMs === undefined ? undefined : positive("deadlineMs", options.deadlineMs);
    this.#maxResponseBytes = positive(
      "maxResponseBytes",
      options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES,
    );
    this.#keptResponseBytes = Math.min(
      this.#maxResponseBytes,
      options.keptResponseBytes ?? Number.POSITIVE_INFINITY,
    );
    this.#overflow = options.responseOverflow ?? "error";
    this.#maxRequestBytes = positive("maxRequestBytes", options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES);
    this.#maxHeaderBytes = positive(
      "maxResponseHeaderBytes",
      options.maxResponseHeaderBytes ?? DEFAULT_MAX_RESPONSE_HEADER_BYTES,
    );
    this.#agents = new AgentPool({
      maxOrigins: options.pool?.maxOrigins ?? 1_000,
      maxSocketsPerOrigin: options.pool?.maxSocketsPerOrigin ?? 8,
      idleSocketTimeoutMs: options.pool?.idleSocketTimeoutMs ?? 4_000,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    });
    this.#guard = options.addressGuard === "off" ? undefined : options.addressGuard;
    this.#lookup = this.#guard === undefined ? undefined : guardedLookup(this.#guard);
    this.#streamPools = new DispatcherPool({
      maxOrigins: options.pool?.maxOrigins ?? 1_000,
      maxSocketsPerOrigin: options.pool?.maxSocketsPerOrigin ?? 8,
      idleSocketTimeoutMs: options.pool?.idleSocketTimeoutMs ?? 4_000,
      connectTimeoutMs: this.timeouts.connectMs,
      maxHeaderBytes: this.#maxHeaderBytes,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      ...(this.#lookup === undefined ? {} : { lookup: this.#lookup }),
    });
    this.#userAgent = options.userAgent;
  }

  /**
   * One exchange. Resolves with the response, whatever its status; rejects with an
   * OUTBOUND_* error (`outbound-errors.ts`) when there is no complete response.
   */
  async request(request: OutboundRequest): Promise<OutboundResponse> {
    const { url, headers, body } = this.#prepare(request);
    const deadlineMs = request.deadlineMs ?? this.#deadlineMs;
    return this.#exchange(request.method, url, headers, body, deadlineMs, request.signal, (res, call) =>
      this.#buffered(res, call),
    );
  }

  /**
   * One exchange whose body is read as it arrives (an SSE stream of tokens): resolves at the
   * response head; the body then fails with OUTBOUND_BODY_TIMEOUT after `idleMs` without a
   * byte (not the whole body's time: a stream lasts minutes), with OUTBOUND_ABORTED when
   * `signal` aborts, and with OUTBOUND_RESPONSE_TOO_LARGE past `maxStreamBytes`. A connection
   * closed before the body's end is an error (OUTBOUND_CONNECTION_FAILED), never a clean end.
   * The client's `deadlineMs` bounds the exchange up to the head only (`request.deadlineMs` too).
   *
   * @example
   * const res = await client.stream({ method: "POST", url, body, idleMs: 30_000, maxStreamBytes: 64 << 20, signal });
   * for await (const chunk of res.body) relay(chunk);
   */
  async stream(request: OutboundStreamRequest): Promise<OutboundStream> {
    const { url, headers, body } = this.#prepare(request);
    return dispatchStream({
      pool: this.#streamPools.poolFor(url),
      url,
      method: request.method,
      headers: headerStrings(headers),
      body,
      timeouts: this.timeouts,
      clock: this.#clock,
      deadlineMs: request.deadlineMs ?? this.#deadlineMs,
      signal: request.signal,
      idleMs: request.idleMs,
      maxStreamBytes: request.maxStreamBytes,
    });
  }

  /** The checked target, headers and body of a call; throws its policy failures before anything is sent. */
  #prepare(request: OutboundRequest): { url: URL; headers: OutgoingHttpHeaders; body: Buffer | undefined } {
    const url = targetOf(request.url);
    if (this.#guard !== undefined) checkUrlHost(url, this.#guard.policy);
    const body = bytesOf(request.body);
    if (body !== undefined && body.length > this.#maxRequestBytes) {
      throw outboundErrors.create("OUTBOUND_REQUEST_TOO_LARGE", {
        fields: { phase: "policy", limitBytes: this.#maxRequestBytes, bytes: body.length },
      });
    }
    const signal = request.signal;
    if (signal?.aborted) {
      throw outboundErrors.create("OUTBOUND_ABORTED", {
        fields: { phase: "policy", host: url.host },
        cause: signal.reason,
      });
    }
    const headers: OutgoingHttpHeaders = { ...request.headers };
    if (this.#userAgent !== undefined && headers["user-agent"] === undefined)
      headers["user-agent"] = this.#userAgent;
    if (body !== undefined) headers["content-length"] = body.length;
    return { url, headers, body };
  }

  /** Closes pooled keep-alive connections. */
  close(): void {
    this.#agents.close();
    this.#streamPools.close();
  }

  #exchange<T>(
    method: string,
    url: URL,
    headers: OutgoingHttpHeaders,
    body: Buffer | undefined,
    deadlineMs: number | undefined,
    signal: AbortSignal | undefined,
    respond: (res: IncomingMessage, call: Call<T>) => void,
  ): Promise<T> {
    return new Promise((resolve, reject) => {
      const startedAtMs = this.#clock.monotonicMs();
      let deadline: NodeJS.Timeout | undefined;
      const fail = (error: CasebookError) => {
        if (settle()) reject(error);
        // No error handed to destroy: the rejection carries it. A small body can be read whole
        // while its socket is already back in the keep-alive pool, with no error listener left:
        // an error destroyed into it was an uncaught 'error' event that killed the process
        // (a scrape over its byte bound, in metrics' scraper test).
        req.destroy();
      };
      const onAbort = () =>
        fail(
          outboundErrors.create("OUTBOUND_ABORTED", {
            fields: { phase: ex.timer.phase, host: url.host },
            cause: signal?.reason,
          }),
        );
      const ex: Exchange = {
        url,
        host: url.host,
        settled: false,
        timer: new PhaseTimer(this.#clock, this.timeouts, (phase, timeoutMs) =>
          fail(phaseTimeout(phase, timeoutMs, url.host)),
        ),
        finish: () => {
          ex.timer.stop();
          clearTimeout(deadline);
          signal?.removeEventListener("abort", onAbort);
        },
      };
      /** True for the first outcome only. */
      const settle = (): boolean => {
        if (ex.settled) return false;
        ex.settled = true;
        ex.finish();
        return true;
      };
      ex.timer.start("connect");
      if (deadlineMs !== undefined) {
        // Not unref'd, like the phase timers: a call in flight is work a shutdown waits for.
        deadline = setTimeout(
          () =>
            fail(
              outboundErrors.create("OUTBOUND_DEADLINE_EXCEEDED", {
                fields: { phase: ex.timer.phase, deadlineMs, host: url.host },
              }),
            ),
          deadlineMs,
        );
      }
      signal?.addEventListener("abort", onAbort, { once: true });
      const send = url.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(url, {
        method,
        headers,
        agent: this.#agents.agentFor(url),
        ...(this.#lookup === undefined ? {} : { lookup: this.#lookup }),
        maxHeaderSize: this.#maxHeaderBytes,
      });
      req.on("socket", (socket) => this.#onSocket(socket, req.reusedSocket, ex));
      req.on("error", (error) => {
        const phase = ex.timer.phase; // read before settle stops the timer
        if (settle()) reject(transportFailure(error, phase, url.host));
      });
      req.on("response", (res) => {
        if (ex.settled) return; // a timer, the deadline or the signal ended it first
        ex.timer.start("body");
        res.on("error", (error) => {
          if (settle()) reject(transportFailure(error, "body", url.host));
        });
        respond(res, { ex, settle, fail, resolve, startedAtMs, reused: req.reusedSocket });
      });
      req.end(body);
    });
  }

  /** Reads the whole body (bounded) and resolves the response. */
  #buffered(res: IncomingMessage, call: Call<OutboundResponse>): void {
    const { ex, settle, fail } = call;
    // Read now: once the body ends, a keep-alive socket goes back to the pool and off `res`.
    const remoteAddress = res.socket?.remoteAddress;
    this.#read(res, ex, fail, (kept, bodyBytes, bodyTruncated) => {
      if (!settle()) return;
      call.resolve({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: kept,
        bodyBytes,
        bodyTruncated,
        durationMs: this.#clock.monotonicMs() - call.startedAtMs,
        timings: ex.timer.timings(), // settle stopped the timer: the body phase is closed
        remoteAddress,
        reusedSocket: call.reused,
      });
      if (bodyTruncated) res.destroy();
    });
  }

  /** The connect phase ends when the socket is usable: TCP for http, the TLS handshake for https. */
  #onSocket(socket: Socket, reused: boolean, ex: Exchange): void {
    if (ex.settled) return;
    if (reused || !socket.connecting) {
      ex.timer.start("headers");
      return;
    }
    socket.once(ex.url.protocol === "https:" ? "secureConnect" : "connect", () => {
      if (!ex.settled) ex.timer.start("headers");
    });
  }

  /** Reads up to maxResponseBytes, keeping keptResponseBytes; past the bound, truncates or fails. */
  #read(
    res: IncomingMessage,
    ex: Exchange,
    fail: (error: CasebookError) => void,
    done: (kept: Buffer, bytes: number, truncated: boolean) => void,
  ): void {
    const limitBytes = this.#maxResponseBytes;
    const tooLarge = () =>
      outboundErrors.create("OUTBOUND_RESPONSE_TOO_LARGE", {
        fields: { phase: "body", limitBytes, host: ex.host },
      });
    const declared = Number(res.headers["content-length"]);
    // A declared length over the bound fails before a byte is read (undici does the same).
    if (this.#overflow === "error" && declared > limitBytes) {
      fail(tooLarge());
      return;
    }
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let bytes = 0;
    res.on("data", (chunk: Buffer) => {
      if (ex.settled) return;
      if (keptBytes < this.#keptResponseBytes) {
        const part = chunk.subarray(0, this.#keptResponseBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      bytes += chunk.length;
      if (bytes <= limitBytes) return;
      if (this.#overflow === "error") fail(tooLarge());
      else done(Buffer.concat(kept), limitBytes, true);
    });
    res.on("end", () => done(Buffer.concat(kept), bytes, false));
  }
}
