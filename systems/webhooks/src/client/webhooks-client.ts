/**
 * The webhooks system's client library (`@casebook/webhooks/client`) for another service that
 * publishes events: a small typed wrapper of the public HTTP API with a tenant API key —
 * publish an event (with an `Idempotency-Key`, so a retried or repeated publish is stored once
 * and delivered once), register an endpoint, read an event and its deliveries. Bounds, retries
 * and errors are `api-transport.ts`'s: a retry happens only where it cannot make a second
 * event (nothing sent, or a call the service dedupes by its key).
 *
 * @example
 * const webhooks = new WebhooksClient({ url: "http://127.0.0.1:8113", apiKey: "whk_…" });
 * const endpoint = await webhooks.createSubscription({ url: "https://ops.example/hooks", eventTypes: ["metrics.alert.*"] });
 * const event = await webhooks.publishEvent({ type: "metrics.alert.firing", payload: body, idempotencyKey: "alert-3f9c…" });
 * event.duplicate; // true when this key was published before: nothing new stored, no second delivery
 * webhooks.close();
 */
import { ApiTransport, type ApiTransportOptions } from "./api-transport.ts";

export interface WebhooksClientOptions extends Omit<ApiTransportOptions, "bearer"> {
  /** The tenant's API key (`whk_…`), from the admin API or `casebook webhooks new-key`. */
  readonly apiKey: string;
}

export interface PublishEventInput {
  /** Dotted type, `invoice.paid`; subscriptions filter on it; `webhook.…` is the service's own. */
  readonly type: string;
  /** Any JSON object: the delivered body's `data`. */
  readonly payload: Record<string, unknown>;
  /** Same key, same event: a repeat answers `duplicate: true` and stores nothing. */
  readonly idempotencyKey?: string;
}

export interface PublishedEvent {
  /** The stable event id: every delivery's `webhook-id`. */
  readonly id: string;
  readonly type: string;
  readonly createdAt: string;
  readonly duplicate: boolean;
}

export interface SubscriptionInput {
  readonly url: string;
  /** `a.b`, `a.*` or `*`; absent = every type. */
  readonly eventTypes?: readonly string[];
  readonly rateLimitPerS?: number;
  readonly maxConcurrency?: number;
  readonly orderingKeyPath?: string;
  /** Your own `whsec_…` signing secret; absent = a fresh one, returned once. */
  readonly secret?: string;
}

export interface Subscription {
  readonly id: string;
  readonly url: string;
  readonly eventTypes: readonly string[] | null;
  readonly active: boolean;
  readonly status: "active" | "failing" | "quarantined" | "disabled";
  readonly secretVersion: number;
  readonly createdAt: string;
}

export interface CreatedSubscription extends Subscription {
  /** The signing secret: shown now, never again. */
  readonly secret: string;
}

export interface StoredEvent {
  readonly id: string;
  readonly type: string;
  readonly payload: Record<string, unknown> | null;
  readonly idempotencyKey: string | null;
  readonly createdAt: string;
}

export interface Delivery {
  readonly id: string;
  readonly eventId: string;
  readonly subscriptionId: string;
  readonly state: string;
  readonly attempts: number;
}

export class WebhooksClient {
  readonly #api: ApiTransport;

  constructor(options: WebhooksClientOptions) {
    const { apiKey, ...transport } = options;
    this.#api = new ApiTransport({ ...transport, bearer: apiKey });
  }

  /** POST /v1/events: stored with its outbox row; delivered later to every matching endpoint. */
  publishEvent(input: PublishEventInput, options: { signal?: AbortSignal } = {}): Promise<PublishedEvent> {
    return this.#api.call<PublishedEvent>({
      method: "POST",
      path: "/v1/events",
      body: { type: input.type, payload: input.payload },
      ...(input.idempotencyKey === undefined ? {} : { idempotencyKey: input.idempotencyKey }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  }

  /** POST /v1/subscriptions: not retried after it may have been sent (a repeat would make a second endpoint). */
  createSubscription(input: SubscriptionInput): Promise<CreatedSubscription> {
    return this.#api.call<CreatedSubscription>({ method: "POST", path: "/v1/subscriptions", body: input });
  }

  getEvent(id: string): Promise<StoredEvent> {
    return this.#api.call<StoredEvent>({ method: "GET", path: `/v1/events/${encodeURIComponent(id)}` });
  }

  /** The newest page of deliveries, filtered by event, endpoint or state. */
  async listDeliveries(
    filter: { eventId?: string; subscriptionId?: string; state?: string } = {},
  ): Promise<Delivery[]> {
    const query = new URLSearchParams(
      Object.entries(filter).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
    const page = await this.#api.call<{ items: Delivery[] }>({
      method: "GET",
      path: `/v1/webhook-deliveries${query.size === 0 ? "" : `?${query}`}`,
    });
    return page.items;
  }

  close(): void {
    this.#api.close();
  }
}
