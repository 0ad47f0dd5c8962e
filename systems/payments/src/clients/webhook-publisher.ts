/**
 * Where the outbox relay sends post-payment events: the webhooks system's public API
 * when `WEBHOOKS_URL` is set (systems talk over public APIs, never by importing each
 * other), an in-memory recorder otherwise, so the service runs alone on a bare machine.
 *
 * The HTTP publisher POSTs one event per request to `WEBHOOKS_URL` (the full endpoint
 * URL) with the event id as `Idempotency-Key`, so a republished event (at-least-once
 * relay) is deduped by the receiver, on infra's outbound client: a timeout per phase
 * (connect, headers, body) under one deadline on the whole call, the relay's AbortSignal
 * passed through, the response read to a bound. Any 2xx is acceptance; anything else —
 * status (a 3xx included: redirects are never followed), network error, timeout (an
 * OUTBOUND_* error naming its phase) — is a failure the relay retries with backoff.
 *
 * @example
 * const publisher = createEventPublisher(config); // config.webhooksUrl, config.webhooksApiKey
 * const relay = new OutboxRelay(db, { publisher });
 */
import { OutboundClient, type PhaseTimeouts } from "@casebook/infra/http/outbound";
import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import type { OutboxEvent } from "../store/outbox.ts";
import type { EventPublisher } from "../workers/outbox-relay.ts";

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
/** Phase bounds under the deadline: the webhooks intake is a service next to this one. */
export const DEFAULT_WEBHOOK_PHASE_TIMEOUTS: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 1_000,
  headersMs: 5_000,
  bodyMs: 2_000,
});
/** Bound on the response body read for the error message, in characters. */
const ERROR_BODY_MAX_CHARS = 500;
/** Response bytes read: an intake's answer is small; a bigger one is cut, not buffered. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/**
 * Connections to the intake at once: far above the relay's parallelism (maxInFlightKeys,
 * 16 by default), so a publish never queues for a socket under its connect timeout.
 */
const MAX_PUBLISH_SOCKETS = 256;

export interface WebhookPublisherOptions {
  /** The webhooks system's event intake, e.g. http://127.0.0.1:8113/v1/events. */
  url: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string;
  /** Bound on one POST, connect to last byte (the outbound deadline). Default 5 000. */
  timeoutMs?: number;
  /** Per-phase bounds inside that deadline. Default DEFAULT_WEBHOOK_PHASE_TIMEOUTS. */
  timeouts?: Partial<PhaseTimeouts>;
}

/** The request body: the event, bigints already strings in the payload. */
export function eventBody(event: OutboxEvent): string {
  return JSON.stringify({
    id: event.eventId,
    type: event.type,
    orderingKey: event.orderingKey,
    seq: event.seq.toString(),
    createdAt: new Date(event.createdAtMs).toISOString(),
    payload: event.payload,
  });
}

/**
 * An EventPublisher that POSTs each event to the webhooks system.
 *
 * @example
 * const publisher = createWebhookPublisher({ url: "http://127.0.0.1:8113/v1/events", timeoutMs: 2_000 });
 */
export function createWebhookPublisher(options: WebhookPublisherOptions): EventPublisher {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new RangeError("WEBHOOKS_URL is not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new RangeError("WEBHOOKS_URL must be http(s)");
  const timeoutMs = options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
  if (!(Number.isInteger(timeoutMs) && timeoutMs > 0))
    throw new RangeError("timeoutMs must be an integer > 0");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  // Idle keep-alive sockets are unref'd by node:http and close after 4 s: no close hook needed.
  const client = new OutboundClient({
    addressGuard: "off", // the operator's WEBHOOKS_URL, not a user's
    timeouts: { ...DEFAULT_WEBHOOK_PHASE_TIMEOUTS, ...options.timeouts },
    deadlineMs: timeoutMs,
    maxResponseBytes: MAX_RESPONSE_BYTES,
    responseOverflow: "truncate",
    keptResponseBytes: 4 * ERROR_BODY_MAX_CHARS,
    pool: { maxOrigins: 1, maxSocketsPerOrigin: MAX_PUBLISH_SOCKETS, idleSocketTimeoutMs: 4_000 },
  });
  return {
    async publish(event, signal) {
      const response = await client.request({
        method: "POST",
        url,
        headers: { ...headers, "idempotency-key": event.eventId },
        body: eventBody(event),
        signal,
      });
      if (response.status >= 200 && response.status < 300) return;
      const text = response.body.toString("utf8");
      throw outboxErrors.create("OUTBOX_PUBLISH_FAILED", {
        fields: { eventId: event.eventId, status: response.status },
        detail: `webhooks answered ${response.status}: ${text.slice(0, ERROR_BODY_MAX_CHARS)}`,
      });
    },
  };
}

/**
 * Keeps the last `maxEvents` published events in memory: the default when no webhooks
 * service is configured, and a recorder for tests.
 *
 * @example
 * const memory = new MemoryPublisher(1_000);
 * memory.events.at(-1)?.type; // "payment.captured"
 */
export class MemoryPublisher implements EventPublisher {
  readonly maxEvents: number;
  readonly events: OutboxEvent[] = [];

  constructor(maxEvents = 10_000) {
    if (!(Number.isInteger(maxEvents) && maxEvents > 0))
      throw new RangeError("maxEvents must be an integer > 0");
    this.maxEvents = maxEvents;
  }

  async publish(event: OutboxEvent): Promise<void> {
    this.events.push(event);
    // Bounded: the oldest go first, so a service left running without webhooks does not grow.
    if (this.events.length > this.maxEvents) this.events.splice(0, this.events.length - this.maxEvents);
  }
}

/**
 * The webhook publisher when `WEBHOOKS_URL` is set (with `WEBHOOKS_API_KEY`), else a MemoryPublisher.
 * Both come from the config schema (config.ts), so `--help` lists them.
 */
export function createEventPublisher(config: {
  readonly webhooksUrl?: string | undefined;
  readonly webhooksApiKey?: string | undefined;
}): EventPublisher {
  const url = config.webhooksUrl;
  if (!url) return new MemoryPublisher();
  return createWebhookPublisher({ url, apiKey: config.webhooksApiKey });
}
