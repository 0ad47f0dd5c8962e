/**
 * Sends one signed webhook attempt (issue 4, WH-13, WH-16): a POST with node:http(s)
 * that is safe to point at a URL a tenant typed in.
 *
 * - SSRF: the URL passes url-policy (scheme, IP literals, localhost names), and host
 *   names resolve through address-guard, which checks every address and connects to
 *   the checked one: DNS rebinding cannot swap the address between check and connect.
 * - Redirects are never followed: a 3xx is the answer (following one would bypass the
 *   guard and hand the signed payload to a URL nobody registered).
 * - Every phase has its own timeout and its own typed error (WEBHOOK_SEND_TIMEOUT with
 *   `phase`), because "never connected" and "connected, never answered" mean different
 *   things to the person reading the delivery log.
 * - The response body is read up to `maxBodyBytes`, then the connection is dropped; only
 *   a short excerpt is kept for the attempt log.
 * - The signature is computed at send time with the current timestamp: a retry two hours
 *   later still falls inside the receiver's 5-minute tolerance window.
 *
 * @example
 * const sender = new HttpSender({ policy: createUrlPolicy() });
 * const response = await sender.send({ url, messageId: "msg_1", body, secrets: signingSecrets(versions, now) });
 * const outcome = decideOutcome({ result: attemptResultOf(response), … });
 */
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from "node:http";
import { request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { type Clock, systemClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import { deliveryErrors } from "../domain/delivery-errors.ts";
import type { AttemptResult, SendPhase } from "../domain/delivery-outcome.ts";
import { signedHeaders } from "../domain/signature.ts";
import { type EndpointUrl, type UrlPolicy, validateEndpointUrl } from "../domain/url-policy.ts";
import { guardedLookup, type Resolver, systemResolver } from "./address-guard.ts";
import { AgentPool } from "./agent-pool.ts";
import { type PhaseTimeouts, PhaseTimer, type PhaseTimings } from "./phase-timer.ts";

export const SEND_TIMEOUTS_DEFAULT: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 5_000,
  headersMs: 15_000,
  bodyMs: 5_000,
});
/** Response bytes read before the connection is dropped. */
export const RESPONSE_BYTES_MAX_DEFAULT = 64 * 1024;
/** Response bytes kept for the attempt log. */
export const BODY_EXCERPT_BYTES_DEFAULT = 1_024;
/** Response head size Node accepts, stated rather than inherited. */
const RESPONSE_HEADER_BYTES_MAX = 16 * 1024;

export interface HttpSenderOptions {
  policy: UrlPolicy;
  resolver?: Resolver;
  clock?: Clock;
  timeouts?: Partial<PhaseTimeouts>;
  maxBodyBytes?: number;
  bodyExcerptBytes?: number;
  maxOrigins?: number;
  maxSocketsPerOrigin?: number;
  idleSocketTimeoutMs?: number;
  /** Extra CAs for https endpoints (tests with a self-signed receiver). */
  ca?: string | Buffer;
  userAgent?: string;
}

export interface OutgoingWebhook {
  url: string;
  /** The stable id receivers dedupe on (WH-14): the same on every retry. */
  messageId: string;
  body: string | Buffer;
  /** Live signing secrets, newest first (secret-rotation.ts). */
  secrets: readonly string[];
}

export interface SendResponse {
  readonly status: number;
  readonly headers: { retryAfter?: string; location?: string; contentType?: string };
  readonly durationMs: number;
  readonly timings: PhaseTimings;
  readonly bodyExcerpt: string;
  /** Bytes read; when truncated, the bound at which reading stopped. */
  readonly bodyBytes: number;
  readonly bodyTruncated: boolean;
  readonly remoteAddress: string | undefined;
  readonly reusedSocket: boolean;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export class HttpSender {
  readonly #policy: UrlPolicy;
  readonly #clock: Clock;
  readonly #timeouts: PhaseTimeouts;
  readonly #maxBodyBytes: number;
  readonly #excerptBytes: number;
  readonly #agents: AgentPool;
  readonly #lookup: ReturnType<typeof guardedLookup>;
  readonly #userAgent: string;

  constructor(options: HttpSenderOptions) {
    this.#policy = options.policy;
    this.#clock = options.clock ?? systemClock;
    this.#timeouts = { ...SEND_TIMEOUTS_DEFAULT, ...options.timeouts };
    for (const [name, ms] of Object.entries(this.#timeouts)) {
      if (!(ms > 0) || !Number.isFinite(ms)) throw new RangeError(`timeouts.${name} must be > 0, got ${ms}`);
    }
    this.#maxBodyBytes = options.maxBodyBytes ?? RESPONSE_BYTES_MAX_DEFAULT;
    this.#excerptBytes = Math.min(this.#maxBodyBytes, options.bodyExcerptBytes ?? BODY_EXCERPT_BYTES_DEFAULT);
    if (!(this.#maxBodyBytes >= 1)) throw new RangeError("maxBodyBytes must be >= 1");
    this.#agents = new AgentPool({
      maxOrigins: options.maxOrigins ?? 1_000,
      maxSocketsPerOrigin: options.maxSocketsPerOrigin ?? 8,
      idleSocketTimeoutMs: options.idleSocketTimeoutMs ?? 4_000,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    });
    this.#lookup = guardedLookup({ policy: options.policy, resolver: options.resolver ?? systemResolver });
    this.#userAgent = options.userAgent ?? "casebook-webhooks/0.1";
  }

  /**
   * One attempt. Resolves with the response, whatever its status; rejects with a typed
   * error (WEBHOOK_URL_*, WEBHOOK_SEND_*) when there is no complete response.
   */
  async send(message: OutgoingWebhook): Promise<SendResponse> {
    // Checked on every attempt, not only at registration: the policy may have changed since.
    const target = validateEndpointUrl(message.url, this.#policy);
    const body = typeof message.body === "string" ? Buffer.from(message.body) : message.body;
    const timestampS = Math.floor(this.#clock.nowMs() / 1_000);
    const headers: OutgoingHttpHeaders = {
      ...signedHeaders({ id: message.messageId, timestampS, body, secrets: message.secrets }),
      "content-type": "application/json",
      "content-length": body.length,
      "user-agent": this.#userAgent,
    };
    return this.#exchange(target, headers, body);
  }

  /** Closes pooled keep-alive connections. */
  close(): void {
    this.#agents.close();
  }

  #exchange(target: EndpointUrl, headers: OutgoingHttpHeaders, body: Buffer): Promise<SendResponse> {
    return new Promise((resolve, reject) => {
      const startedAtMs = this.#clock.monotonicMs();
      const host = target.hostname;
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        timer.stop();
        outcome();
      };
      const timer = new PhaseTimer(this.#clock, this.#timeouts, (phase, timeoutMs) => {
        const error = deliveryErrors.create("WEBHOOK_SEND_TIMEOUT", { fields: { phase, timeoutMs, host } });
        settle(() => reject(error));
        req.destroy(error);
      });
      timer.start("connect");
      const send = target.url.protocol === "https:" ? httpsRequest : httpRequest;
      const req = send(target.url, {
        method: "POST",
        headers,
        agent: this.#agents.agentFor(target.url),
        lookup: this.#lookup,
        maxHeaderSize: RESPONSE_HEADER_BYTES_MAX,
      });
      req.on("socket", (socket) => this.#onSocket(socket, req.reusedSocket, target, timer));
      req.on("error", (error) => settle(() => reject(this.#failure(error, timer.phase, host))));
      req.on("response", (res) => {
        timer.start("body");
        const remoteAddress = res.socket?.remoteAddress;
        this.#read(res, (excerpt, bodyBytes, bodyTruncated) =>
          settle(() =>
            resolve({
              status: res.statusCode ?? 0,
              headers: {
                retryAfter: firstHeader(res.headers["retry-after"]),
                location: firstHeader(res.headers.location),
                contentType: firstHeader(res.headers["content-type"]),
              },
              durationMs: this.#clock.monotonicMs() - startedAtMs,
              timings: timer.timings(), // settle stopped the timer: the body phase is closed
              bodyExcerpt: excerpt,
              bodyBytes,
              bodyTruncated,
              remoteAddress,
              reusedSocket: req.reusedSocket,
            }),
          ),
        );
        res.on("error", (error) => settle(() => reject(this.#failure(error, "body", host))));
      });
      req.end(body);
    });
  }

  /** The connect phase ends when the socket is usable: TCP for http, the TLS handshake for https. */
  #onSocket(socket: Socket, reused: boolean, target: EndpointUrl, timer: PhaseTimer): void {
    if (reused || !socket.connecting) {
      timer.start("headers");
      return;
    }
    socket.once(target.url.protocol === "https:" ? "secureConnect" : "connect", () => timer.start("headers"));
  }

  /** Reads up to maxBodyBytes, keeping an excerpt; past the bound the connection is dropped. */
  #read(res: IncomingMessage, done: (excerpt: string, bytes: number, truncated: boolean) => void): void {
    const kept: Buffer[] = [];
    let keptBytes = 0;
    let bytes = 0;
    res.on("data", (chunk: Buffer) => {
      if (keptBytes < this.#excerptBytes) {
        const part = chunk.subarray(0, this.#excerptBytes - keptBytes);
        kept.push(part);
        keptBytes += part.length;
      }
      bytes += chunk.length;
      if (bytes > this.#maxBodyBytes) {
        done(Buffer.concat(kept).toString("utf8"), this.#maxBodyBytes, true);
        res.destroy();
      }
    });
    res.on("end", () => done(Buffer.concat(kept).toString("utf8"), bytes, false));
  }

  #failure(error: Error, phase: SendPhase, host: string): CasebookError {
    if (deliveryErrors.is(error)) return error;
    const code = (error as NodeJS.ErrnoException).code ?? "EUNKNOWN";
    return deliveryErrors.create("WEBHOOK_SEND_CONNECTION_FAILED", {
      fields: { phase, code, host },
      cause: error,
    });
  }
}

/**
 * What an attempt gave, in delivery-outcome's terms: a response, or the typed failure.
 * Anything else thrown is a bug and is rethrown.
 *
 * @example
 * const result = await sender.send(message).then(attemptResultOf, attemptResultOf);
 */
export function attemptResultOf(outcome: unknown): AttemptResult {
  if (!(outcome instanceof Error)) {
    const response = outcome as SendResponse;
    const retryAfter = response.headers.retryAfter;
    return retryAfter === undefined
      ? { kind: "response", status: response.status }
      : { kind: "response", status: response.status, retryAfter };
  }
  if (!deliveryErrors.is(outcome)) throw outcome;
  const fields = outcome.fields;
  switch (outcome.code) {
    case "WEBHOOK_SEND_TIMEOUT":
      return { kind: "timeout", phase: fields.phase as SendPhase };
    case "WEBHOOK_SEND_CONNECTION_FAILED":
      return { kind: "connection_error", phase: fields.phase as SendPhase, code: String(fields.code) };
    case "WEBHOOK_SEND_DNS_FAILED":
      return { kind: "dns_error", code: String(fields.code) };
    case "WEBHOOK_SEND_ADDRESS_REFUSED":
    case "WEBHOOK_URL_FORBIDDEN":
      return { kind: "address_refused", addressClass: String(fields.addressClass) };
    case "WEBHOOK_URL_INVALID":
    case "WEBHOOK_URL_INSECURE":
      return { kind: "address_refused", addressClass: "invalid_url" };
    default:
      throw outcome;
  }
}
