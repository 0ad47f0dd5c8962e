/**
 * The errors of an outbound HTTP call (`outbound.ts`), one code per way a call can fail,
 * modelled on undici's `lib/core/errors.js` (ConnectTimeoutError, HeadersTimeoutError,
 * BodyTimeoutError, ResponseExceededMaxSizeError, SocketError…): a stable code, the
 * `phase` it failed in and its context as `fields`, the underlying error as `{ cause }`.
 *
 * The phase is what a caller decides on. A failure in `policy`, `dns` or `connect` sent
 * nothing (safe to retry, surely not processed); one in `headers` or `body` happened after
 * the request went out, so the far side may have acted on it: an unknown outcome
 * (`mayHaveBeenProcessed`). Timeouts are split by phase because "never connected" and
 * "connected, never answered" mean different things in a delivery log.
 *
 * | code | phase | fields |
 * |---|---|---|
 * | `OUTBOUND_URL_INVALID` | policy | `reason` |
 * | `OUTBOUND_REQUEST_TOO_LARGE` | policy | `limitBytes`, `bytes` |
 * | `OUTBOUND_ADDRESS_REFUSED` | policy | `hostname`, `address`, `addressClass` |
 * | `OUTBOUND_DNS_FAILED` | dns | `hostname`, `code` |
 * | `OUTBOUND_CONNECT_TIMEOUT` | connect | `timeoutMs`, `host` |
 * | `OUTBOUND_HEADERS_TIMEOUT` | headers | `timeoutMs`, `host` |
 * | `OUTBOUND_BODY_TIMEOUT` | body | `timeoutMs`, `host` |
 * | `OUTBOUND_DEADLINE_EXCEEDED` | the phase it ended | `deadlineMs`, `host` |
 * | `OUTBOUND_ABORTED` | the phase it ended | `host` (cause: the signal's reason) |
 * | `OUTBOUND_CONNECTION_FAILED` | connect, headers, body | `code` (ECONNREFUSED, ECONNRESET…), `host` |
 * | `OUTBOUND_RESPONSE_TOO_LARGE` | body | `limitBytes`, `host` |
 *
 * @example
 * try { await client.request({ method: "GET", url }); }
 * catch (error) {
 *   if (outboundErrors.is(error, "OUTBOUND_HEADERS_TIMEOUT")) log.warn({ timeoutMs: error.fields.timeoutMs });
 *   if (outboundErrors.is(error) && !mayHaveBeenProcessed(error)) retryNow();
 * }
 */
import { type CasebookError, defineErrors } from "@casebook/kit/errors";
import type { TimedPhase } from "./phase-timer.ts";

/**
 * Where a call was when it failed: refused by this client's rules before anything was
 * sent (`policy`), resolving the name, opening the connection (TCP, TLS, a wait for a
 * pooled socket), waiting for the response head, reading the body.
 */
export type OutboundPhase = "policy" | "dns" | "connect" | "headers" | "body";

export const outboundErrors = defineErrors({
  OUTBOUND_URL_INVALID: {
    status: 400,
    message: "The outbound URL is not a valid absolute http(s) URL; `reason` says what to fix.",
  },
  OUTBOUND_REQUEST_TOO_LARGE: {
    status: 413,
    message: "The outbound request body is larger than this client sends (`limitBytes`); send less at once.",
  },
  OUTBOUND_ADDRESS_REFUSED: {
    status: 422,
    message:
      "The host is, or resolved to, an address this client never calls (`addressClass`: loopback, private, link-local…); nothing was sent.",
  },
  OUTBOUND_DNS_FAILED: {
    status: 502,
    message: "The host name did not resolve (`code`); check the URL or its DNS records.",
  },
  OUTBOUND_CONNECT_TIMEOUT: {
    status: 504,
    message: "No connection to the host within `timeoutMs` (DNS, TCP and TLS included); nothing was sent.",
  },
  OUTBOUND_HEADERS_TIMEOUT: {
    status: 504,
    message:
      "The host accepted the request but sent no response head within `timeoutMs`; the outcome is unknown.",
  },
  OUTBOUND_BODY_TIMEOUT: {
    status: 504,
    message:
      "The host sent a response head but not the whole body within `timeoutMs`; the outcome is unknown.",
  },
  OUTBOUND_DEADLINE_EXCEEDED: {
    status: 504,
    message: "The call did not finish within its overall deadline (`deadlineMs`); `phase` says where it was.",
  },
  OUTBOUND_ABORTED: {
    status: 503,
    message: "The caller aborted the call (its signal fired); `phase` says where it was.",
  },
  OUTBOUND_CONNECTION_FAILED: {
    status: 502,
    message: "The connection failed during `phase` (`code`); retry, and check the host is up.",
  },
  OUTBOUND_RESPONSE_TOO_LARGE: {
    status: 502,
    message: "The response body is larger than this client reads (`limitBytes`); reading stopped there.",
  },
});

export type OutboundErrorCode = keyof typeof outboundErrors.specs;

/** The phase an outbound error carries (every code sets one). */
export function phaseOf(error: CasebookError): OutboundPhase {
  return error.fields.phase as OutboundPhase;
}

/**
 * True when the request may have reached the far side: the failure came after the
 * connection opened (headers, body), so a non-idempotent call has an unknown outcome.
 *
 * @example
 * if (!mayHaveBeenProcessed(error)) retry(); else askTheOtherSideByKey();
 */
export function mayHaveBeenProcessed(error: CasebookError): boolean {
  const phase = phaseOf(error);
  return phase === "headers" || phase === "body";
}

// getaddrinfo's codes: a name that did not resolve, wherever the lookup ran.
const DNS_CODES = new Set(["ENOTFOUND", "EAI_AGAIN", "EAI_NONAME", "EAI_NODATA", "EAI_FAIL", "ENODATA"]);
/** undici's codes for what node:http reports as an errno: the same `code` whichever client failed. */
const ERRNO_OF: Readonly<Record<string, string>> = { UND_ERR_SOCKET: "ECONNRESET" };

/**
 * A transport's failure (node:http's or undici's) as an outbound error: a name that did not
 * resolve is OUTBOUND_DNS_FAILED, anything else OUTBOUND_CONNECTION_FAILED with its code; an
 * outbound error (ours, coming back through the transport) is returned as it is.
 *
 * @example
 * req.on("error", (error) => reject(transportFailure(error, timer.phase, url.host)));
 */
export function transportFailure(error: Error, phase: OutboundPhase, host: string): CasebookError {
  if (outboundErrors.is(error)) return error;
  const errno = error as NodeJS.ErrnoException & { hostname?: string };
  const raw = errno.code ?? "EUNKNOWN";
  const code = ERRNO_OF[raw] ?? raw;
  if (errno.syscall === "getaddrinfo" || (phase === "connect" && DNS_CODES.has(code))) {
    return outboundErrors.create("OUTBOUND_DNS_FAILED", {
      fields: { phase: "dns", hostname: errno.hostname ?? host, code },
      cause: error,
    });
  }
  return outboundErrors.create("OUTBOUND_CONNECTION_FAILED", { fields: { phase, code, host }, cause: error });
}

const TIMEOUT_CODE = {
  connect: "OUTBOUND_CONNECT_TIMEOUT",
  headers: "OUTBOUND_HEADERS_TIMEOUT",
  body: "OUTBOUND_BODY_TIMEOUT",
} as const satisfies Record<TimedPhase, string>;

/**
 * The timeout of `phase` (its own code: "never connected" and "never answered" mean different
 * things), for whichever transport's phase timer fired.
 *
 * @example
 * new PhaseTimer(clock, timeouts, (phase, timeoutMs) => fail(phaseTimeout(phase, timeoutMs, url.host)));
 */
export function phaseTimeout(phase: TimedPhase, timeoutMs: number, host: string): CasebookError {
  return outboundErrors.create(TIMEOUT_CODE[phase], { fields: { phase, timeoutMs, host } });
}
