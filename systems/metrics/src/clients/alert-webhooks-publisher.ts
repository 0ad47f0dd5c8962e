/**
 * Alert notifications through the webhooks system (when `WEBHOOKS_URL` is set): each alert of
 * a notification becomes one event, type `metrics.alert.firing` or `metrics.alert.resolved`,
 * whose payload is Alertmanager's webhook body (version 4) for that alert — the endpoints
 * subscribed there receive it as the signed Standard Webhooks envelope's `data`, retried by
 * that system for its whole window. The Idempotency-Key of each event is derived from (group,
 * rule, fingerprint, status, the evaluation that decided it) (`domain/alert-notification.ts`):
 * a retried publish, or the repeat a restarted evaluator sends from its log, is stored once
 * and delivered once (`duplicate: true` comes back, counted in `duplicates`).
 *
 * Publishing runs on the same bounded queue as the plain-HTTP sink (`NotificationQueue`); the
 * client's own retries are off (one try per queue attempt), a 4xx is final, and a 409 (this
 * key already names another body: the log and the data disagreed) is counted and given up.
 *
 * @example
 * const sink = new AlertWebhooksPublisher({ url: "http://127.0.0.1:8113", apiKey: "whk_…" });
 * sink.send(notification);
 * await sink.close();
 */
import { WebhooksClient, webhooksClientErrors } from "@casebook/webhooks/client";
import { type AlertEvent, type AlertNotification, perAlertEvents } from "../domain/alert-notification.ts";
import { NotificationQueue, type NotificationQueueBounds } from "./notification-queue.ts";

export const ALERT_EVENT_TYPE_PREFIX = "metrics.alert";

export interface AlertWebhooksPublisherOptions extends NotificationQueueBounds {
  /** The webhooks service's base URL. */
  readonly url: string;
  /** A webhooks tenant's API key (`whk_…`). */
  readonly apiKey: string;
  readonly onPublished?: (event: AlertEvent, duplicate: boolean) => void;
  readonly onFailed?: (error: unknown, event: AlertEvent) => void;
}

export class AlertWebhooksPublisher {
  readonly #client: WebhooksClient;
  readonly #queue: NotificationQueue<AlertEvent>;
  /** Publishes the webhooks system answered as a repeat of a key it had. */
  duplicates = 0;
  /** Keys that named another body already (409): given up, counted. */
  conflicts = 0;

  constructor(options: AlertWebhooksPublisherOptions) {
    const { url, apiKey, onPublished, ...rest } = options;
    this.#client = new WebhooksClient({
      url,
      apiKey,
      attempts: 1, // the queue retries: one bound, not two multiplied
      userAgent: "casebook-metrics-alerts",
    });
    this.#queue = new NotificationQueue<AlertEvent>({
      ...rest,
      deliver: async (event) => {
        const published = await this.#client.publishEvent({
          type: `${ALERT_EVENT_TYPE_PREFIX}.${event.status}`,
          payload: event.payload as unknown as Record<string, unknown>,
          idempotencyKey: event.key,
        });
        if (published.duplicate) this.duplicates++;
        onPublished?.(event, published.duplicate);
      },
      isFinal: (error) => {
        if (webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT")) this.conflicts++;
        return (
          webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT") ||
          webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_REJECTED") ||
          webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_CONFIG_INVALID")
        );
      },
    });
  }

  send(notification: AlertNotification): void {
    for (const event of perAlertEvents(notification)) this.#queue.send(event);
  }

  async close(): Promise<void> {
    await this.#queue.close();
    this.#client.close();
  }
}
