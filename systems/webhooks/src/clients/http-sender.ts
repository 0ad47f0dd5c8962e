/**
 * Sends one signed webhook attempt (issue 4, WH-13, WH-16): a POST with node:http(s)
 * that is safe to point at a URL a tenant typed in.
 *
 * The HTTP itself is infra's outbound client (`@casebook/infra/http/outbound`, issue 10);
 * this file adds what is webhooks' own:
 *
 * - SSRF: the URL passes url-policy (https, no credentials, IP literals, localhost names)
 *   on every attempt, and the client runs with the address guard on, which checks every
 *   address a host name resolves to and connects to the checked one: DNS rebinding cannot
 *   swap the address between check and connect.
 * - Redirects are never followed (the client never does): a 3xx is the answer.
 * - Every phase has its own timeout and its own typed error (OUTBOUND_CONNECT_TIMEOUT,
 *   OUTBOUND_HEADERS_TIMEOUT, OUTBOUND_BODY_TIMEOUT, each with `phase`), because "never
 *   connected" and "connected, never answered" mean different things to the person
 *   reading the delivery log; `attemptResultOf` maps them to delivery-outcome's terms.
 * - The response body is read up to `maxBodyBytes`, then the connection is dropped
 *   (`responseOverflow: "truncate"`: a big answer is still an answer); only a short
 *   excerpt is kept for the attempt log.
 * - The signature is computed at send time with the current timestamp: a retry two hours
 *   later still falls inside the receiver's 5-minute tolerance window.
 *
 * @example
 * const sender = new HttpSender({ policy: createUrlPolicy() });
 * const response = await sender.send({ url, messageId: "msg_1", body, secrets: signingSecrets(versions, now) });
 * const outcome = decideOutcome({ result: attemptResultOf(response), … });
 */
import type { Resolver } from "@casebook/infra/http/address-guard";
import { OutboundClient, type OutboundResponse, type PhaseTimeouts } from "@casebook/infra/http/outbound";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { type Clock, systemClock } from "@casebook/kit/clock";
import type { CasebookError } from "@casebook/kit/errors";
import type { AttemptResult, SendPhase } from "../domain/delivery-outcome.ts";
import { signedHeaders } from "../domain/signature.ts";
import { type UrlPolicy, validateEndpointUrl } from "../domain/url-policy.ts";
import { deliveryErrors } from "../errors.ts";

export const DEFAULT_SEND_TIMEOUTS: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 5_000,
  headersMs: 15_000,
  bodyMs: 5_000,
});
/** Response bytes read before the connection is dropped. */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;
/** Response bytes kept for the attempt log. */
export const DEFAULT_BODY_EXCERPT_BYTES = 1_024;
/** Response head size Node accepts, stated rather than inherited. */
const MAX_RESPONSE_HEADER_BYTES = 16 * 1024;
/**
 * Request bytes sent at most: above any body ingest accepts (payloads are bounded at 1 MiB
 * of JSON there), so this bound is a backstop that an accepted event never meets.
 */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

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
  readonly timings: OutboundResponse["timings"];
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
  readonly #client: OutboundClient;
  readonly #userAgent: string;

  constructor(options: HttpSenderOptions) {
    this.#policy = options.policy;
    this.#clock = options.clock ?? systemClock;
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    if (!(maxBodyBytes >= 1)) throw new RangeError("maxBodyBytes must be >= 1");
    this.#client = new OutboundClient({
      addressGuard: {
        policy: options.policy,
        ...(options.resolver === undefined ? {} : { resolver: options.resolver }),
      },
      timeouts: { ...DEFAULT_SEND_TIMEOUTS, ...options.timeouts },
      maxResponseBytes: maxBodyBytes,
      responseOverflow: "truncate",
      keptResponseBytes: options.bodyExcerptBytes ?? DEFAULT_BODY_EXCERPT_BYTES,
      maxRequestBytes: MAX_REQUEST_BYTES,
      maxResponseHeaderBytes: MAX_RESPONSE_HEADER_BYTES,
      pool: {
        maxOrigins: options.maxOrigins ?? 1_000,
        maxSocketsPerOrigin: options.maxSocketsPerOrigin ?? 8,
        idleSocketTimeoutMs: options.idleSocketTimeoutMs ?? 4_000,
      },
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      clock: this.#clock,
    });
    this.#userAgent = options.userAgent ?? "casebook-webhooks/0.1";
  }

  /**
   * One attempt. Resolves with the response, whatever its status; rejects with a typed
   * error (WEBHOOK_URL_*, OUTBOUND_*) when there is no complete response.
   */
  async send(message: OutgoingWebhook): Promise<SendResponse> {
    // Checked on every attempt, not only at registration: the policy may have changed since.
    const target = validateEndpointUrl(message.url, this.#policy);
    const body = typeof message.body === "string" ? Buffer.from(message.body) : message.body;
    const timestampS = Math.floor(this.#clock.nowMs() / 1_000);
    const res = await this.#client.request({
      method: "POST",
      url: target.url,
      headers: {
        ...signedHeaders({ id: message.messageId, timestampS, body, secrets: message.secrets }),
        "content-type": "application/json",
        "user-agent": this.#userAgent,
      },
      body,
    });
    return {
      status: res.status,
      headers: {
        retryAfter: firstHeader(res.headers["retry-after"]),
        location: firstHeader(res.headers.location),
        contentType: firstHeader(res.headers["content-type"]),
      },
      durationMs: res.durationMs,
      timings: res.timings,
      bodyExcerpt: res.body.toString("utf8"),
      bodyBytes: res.bodyBytes,
      bodyTruncated: res.bodyTruncated,
      remoteAddress: res.remoteAddress,
      reusedSocket: res.reusedSocket,
    };
  }

  /** Closes pooled keep-alive connections. */
  close(): void {
    this.#client.close();
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
  if (outboundErrors.is(outcome)) return outboundResultOf(outcome);
  if (!deliveryErrors.is(outcome)) throw outcome;
  const fields = outcome.fields;
  switch (outcome.code) {
    case "WEBHOOK_URL_FORBIDDEN":
      return { kind: "address_refused", addressClass: String(fields.addressClass) };
    case "WEBHOOK_URL_INVALID":
    case "WEBHOOK_URL_INSECURE":
      return { kind: "address_refused", addressClass: "invalid_url" };
    default:
      throw outcome;
  }
}

/** The outbound client's typed failures in delivery-outcome's terms; any other code is a bug, rethrown. */
function outboundResultOf(error: CasebookError): AttemptResult {
  const fields = error.fields;
  switch (error.code) {
    case "OUTBOUND_CONNECT_TIMEOUT":
    case "OUTBOUND_HEADERS_TIMEOUT":
    case "OUTBOUND_BODY_TIMEOUT":
      return { kind: "timeout", phase: fields.phase as SendPhase };
    case "OUTBOUND_CONNECTION_FAILED":
      return { kind: "connection_error", phase: fields.phase as SendPhase, code: String(fields.code) };
    case "OUTBOUND_DNS_FAILED":
      return { kind: "dns_error", code: String(fields.code) };
    case "OUTBOUND_ADDRESS_REFUSED":
      return { kind: "address_refused", addressClass: String(fields.addressClass) };
    default:
      throw error;
  }
}
