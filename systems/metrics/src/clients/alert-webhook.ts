/**
 * Sends alert notifications (Alertmanager's webhook body) to the configured receiver over
 * plain HTTP, through infra's outbound client (timeouts per phase, bounded bodies). The
 * evaluator never waits on it: `send` queues and returns; the queue is bounded (past it the
 * oldest notification goes and is counted in `dropped`), and each notification is tried a
 * bounded number of times with a growing pause. A 2xx is delivered; anything else is retried.
 *
 * @example
 * const webhook = new AlertWebhook({ url: "http://127.0.0.1:9093/hook", maxQueued: 1_000, attempts: 5 });
 * webhook.send(payload);
 * await webhook.close(); // stops after the notification in flight
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { AlertmanagerWebhook } from "../domain/alertmanager-payload.ts";

export interface AlertWebhookOptions {
  readonly url: string;
  readonly maxQueued?: number;
  readonly attempts?: number;
  readonly retryBaseMs?: number;
  readonly onDelivered?: (payload: AlertmanagerWebhook) => void;
  readonly onFailed?: (error: unknown, payload: AlertmanagerWebhook) => void;
}

export class AlertWebhook {
  readonly #options: AlertWebhookOptions;
  readonly #client = new OutboundClient({
    addressGuard: "off", // an operator-configured receiver, not a URL a tenant supplied
    timeouts: { connectMs: 2_000, headersMs: 5_000, bodyMs: 2_000 },
    userAgent: "casebook-metrics-alerts",
  });
  readonly #queue: AlertmanagerWebhook[] = [];
  #running: Promise<void> | undefined;
  #closed = false;
  dropped = 0;
  delivered = 0;

  constructor(options: AlertWebhookOptions) {
    this.#options = options;
  }

  send(payload: AlertmanagerWebhook): void {
    if (this.#closed) return;
    if (this.#queue.length >= (this.#options.maxQueued ?? 1_000)) {
      this.#queue.shift();
      this.dropped++;
    }
    this.#queue.push(payload);
    this.#running ??= this.#drain().finally(() => {
      this.#running = undefined;
    });
  }

  async #drain(): Promise<void> {
    for (let payload = this.#queue.shift(); payload !== undefined; payload = this.#queue.shift()) {
      await this.#deliver(payload);
    }
  }

  async #deliver(payload: AlertmanagerWebhook): Promise<void> {
    const attempts = this.#options.attempts ?? 5;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts && !this.#closed; attempt++) {
      try {
        const res = await this.#client.request({
          method: "POST",
          url: this.#options.url,
          headers: { "content-type": "application/json" },
          body: JSON.stringify(payload),
        });
        if (res.status >= 200 && res.status < 300) {
          this.delivered++;
          this.#options.onDelivered?.(payload);
          return;
        }
        lastError = new Error(`receiver answered ${res.status}`);
      } catch (error) {
        lastError = error;
      }
      await new Promise((resolve) =>
        setTimeout(resolve, (this.#options.retryBaseMs ?? 500) * 2 ** (attempt - 1)),
      );
    }
    this.#options.onFailed?.(lastError, payload);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#queue.length = 0;
    await this.#running;
    this.#client.close();
  }
}
