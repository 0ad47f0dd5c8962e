/**
 * Where the outbox relay sends post-payment events: the webhooks system's public API
 * when `WEBHOOKS_URL` is set (systems talk over public APIs, never by importing each
 * other: this goes through `@casebook/webhooks/client`), an in-memory recorder otherwise,
 * so the service runs alone on a bare machine.
 *
 * The HTTP publisher publishes one event per call — type the payment event's type, payload
 * `{id, orderingKey, seq, createdAt, payload}` (a subscription orders deliveries per account
 * with `"orderingKeyPath": "orderingKey"`, WH-03) — with the event id as `Idempotency-Key`, so
 * a republished event (at-least-once relay) is stored and delivered once by the webhooks
 * system. One try per publish (the relay retries with its own backoff) on infra's outbound
 * client: a timeout per phase (connect, headers, body) under one deadline on the whole call,
 * the relay's AbortSignal passed through, the response read to a bound. Any 2xx is acceptance;
 * anything else — a status (a 3xx included: redirects are never followed) is
 * OUTBOX_PUBLISH_FAILED with it, a network error or timeout is the OUTBOUND_* error naming its
 * phase — is a failure the relay retries.
 *
 * @example
 * const publisher = createEventPublisher(config); // config.webhooksUrl, config.webhooksApiKey
 * const relay = new OutboxRelay(db, { publisher });
 */
import type { PhaseTimeouts } from "@casebook/infra/http/outbound";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import { WebhooksClient, webhooksClientErrors } from "@casebook/webhooks/client";
import type { OutboxEvent } from "../store/outbox.ts";
import type { EventPublisher } from "../workers/outbox-relay.ts";

export const DEFAULT_WEBHOOK_TIMEOUT_MS = 5_000;
/** Phase bounds under the deadline: the webhooks intake is a service next to this one. */
export const DEFAULT_WEBHOOK_PHASE_TIMEOUTS: Readonly<PhaseTimeouts> = Object.freeze({
  connectMs: 1_000,
  headersMs: 5_000,
  bodyMs: 2_000,
});
/**
 * Connections to the intake at once: far above the relay's parallelism (maxInFlightKeys,
 * 16 by default), so a publish never queues for a socket under its connect timeout.
 */
const MAX_PUBLISH_SOCKETS = 256;
/** The path of the intake, accepted at the end of WEBHOOKS_URL (the form this setting first had). */
const EVENTS_PATH = /\/v1\/events\/?$/;

export interface WebhookPublisherOptions {
  /** The webhooks service, e.g. http://127.0.0.1:8113 (or its intake, …/v1/events). */
  url: string;
  /** The webhooks tenant's API key, sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Bound on one publish, connect to last byte (the outbound deadline). Default 5 000. */
  timeoutMs?: number;
  /** Per-phase bounds inside that deadline. Default DEFAULT_WEBHOOK_PHASE_TIMEOUTS. */
  timeouts?: Partial<PhaseTimeouts>;
}

/** The event's payload at the webhooks system: the outbox event, bigints already strings. */
export function eventPayload(event: OutboxEvent): Record<string, unknown> {
  return {
    id: event.eventId,
    orderingKey: event.orderingKey,
    seq: event.seq.toString(),
    createdAt: new Date(event.createdAtMs).toISOString(),
    payload: event.payload,
  };
}

/** The client's error for a publish, as the relay reads failures: a status, or the outbound error itself. */
function publishFailure(error: unknown, eventId: string): unknown {
  if (!webhooksClientErrors.is(error)) return error;
  if (outboundErrors.is(error.cause)) return error.cause;
  const status = error.fields.lastStatus ?? error.fields.status;
  if (typeof status !== "number") return error;
  return outboxErrors.create("OUTBOX_PUBLISH_FAILED", {
    fields: { eventId, status },
    detail: `webhooks answered ${status}: ${error.message}`,
    cause: error,
  });
}

/**
 * An EventPublisher that publishes each event to the webhooks system.
 *
 * @example
 * const publisher = createWebhookPublisher({ url: "http://127.0.0.1:8113", apiKey: "whk_…", timeoutMs: 2_000 });
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
  url.pathname = url.pathname.replace(EVENTS_PATH, "/");
  // Idle keep-alive sockets are unref'd by node:http and close after 4 s: no close hook needed.
  const client = new WebhooksClient({
    url: url.toString(),
    apiKey: options.apiKey,
    attempts: 1, // the relay retries with its own backoff: one bound, not two multiplied
    timeouts: { ...DEFAULT_WEBHOOK_PHASE_TIMEOUTS, ...options.timeouts },
    deadlineMs: timeoutMs,
    maxSockets: MAX_PUBLISH_SOCKETS,
    userAgent: "casebook-payments-outbox",
  });
  return {
    async publish(event, signal) {
      try {
        await client.publishEvent(
          { type: event.type, payload: eventPayload(event), idempotencyKey: event.eventId },
          { signal },
        );
      } catch (error) {
        throw publishFailure(error, event.eventId);
      }
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
 * The webhook publisher when `WEBHOOKS_URL` is set (with `WEBHOOKS_API_KEY`, which the config's
 * cross-field check requires beside it), else a MemoryPublisher. Both come from the config
 * schema (config.ts), so `--help` lists them.
 */
export function createEventPublisher(config: {
  readonly webhooksUrl?: string | undefined;
  readonly webhooksApiKey?: string | undefined;
}): EventPublisher {
  const url = config.webhooksUrl;
  if (!url) return new MemoryPublisher();
  if (!config.webhooksApiKey) throw new RangeError("WEBHOOKS_API_KEY is required with WEBHOOKS_URL");
  return createWebhookPublisher({ url, apiKey: config.webhooksApiKey });
}
