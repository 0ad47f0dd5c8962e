/**
 * Sends alert notifications (Alertmanager's webhook body) to the configured receiver over
 * plain HTTP, through infra's outbound client (timeouts per phase, bounded bodies), on the
 * shared `NotificationQueue` (bounded, oldest dropped and counted; each notification tried a
 * bounded number of times with a growing pause). A 2xx is delivered; anything else is
 * retried. The default sink; `alert-webhooks-publisher.ts` is the other, when `WEBHOOKS_URL`
 * is set.
 *
 * @example
 * const webhook = new AlertWebhook({ url: "http://127.0.0.1:9093/hook", maxQueued: 1_000, attempts: 5 });
 * webhook.send(notification);
 * await webhook.close(); // stops after the notification in flight
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { AlertNotification } from "../domain/alert-notification.ts";
import type { AlertmanagerWebhook } from "../domain/alertmanager-payload.ts";
import { NotificationQueue, type NotificationQueueBounds } from "./notification-queue.ts";

export interface AlertWebhookOptions extends NotificationQueueBounds {
  readonly url: string;
  readonly onDelivered?: (payload: AlertmanagerWebhook) => void;
  readonly onFailed?: (error: unknown, payload: AlertmanagerWebhook) => void;
}

export class AlertWebhook {
  readonly #client = new OutboundClient({
    addressGuard: "off", // an operator-configured receiver, not a URL a tenant supplied
    timeouts: { connectMs: 2_000, headersMs: 5_000, bodyMs: 2_000 },
    userAgent: "casebook-metrics-alerts",
  });
  readonly #queue: NotificationQueue<AlertmanagerWebhook>;

  constructor(options: AlertWebhookOptions) {
    const { url, ...rest } = options;
    this.#queue = new NotificationQueue<AlertmanagerWebhook>({
      ...rest,
      deliver: async (payload) => {
        const res = await this.#client.request({
          method: "POST",
          url,
          headers: { "content-type": "application/json" },
          body: JSON.stringify(payload),
        });
        if (res.status < 200 || res.status >= 300) throw new Error(`receiver answered ${res.status}`);
      },
    });
  }

  send(notification: AlertNotification): void {
    this.#queue.send(notification.payload);
  }

  async close(): Promise<void> {
    await this.#queue.close();
    this.#client.close();
  }
}
