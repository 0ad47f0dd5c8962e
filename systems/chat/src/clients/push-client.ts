/**
 * The push provider over HTTP (CH-22): the push simulator in tests and `casebook run`, a
 * gateway to SNS/APNs/FCM in production, behind the same small API. infra's OutboundClient,
 * every phase bounded; 410 means the token is gone, any other failure is "failed" (the
 * message waits in the history; nothing is retried here).
 *
 * @example
 * const provider = new PushClient({ baseUrl: "http://127.0.0.1:8117" });
 * await provider.send({ platform: "fcm", token, title: "ana", body: "oi", data: { chatId, seq } }); // "sent"
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { PushOutcome, PushProvider } from "../domain/push-path.ts";

export class PushClient implements PushProvider {
  readonly #client: OutboundClient;
  readonly #url: string;

  constructor(options: { baseUrl: string; deadlineMs?: number }) {
    this.#url = `${options.baseUrl.replace(/\/$/, "")}/v1/push`;
    this.#client = new OutboundClient({
      addressGuard: "off",
      deadlineMs: options.deadlineMs ?? 5_000,
      timeouts: { connectMs: 1_000, headersMs: 5_000, bodyMs: 1_000 },
      maxResponseBytes: 64 * 1_024,
      userAgent: "casebook-chat-push",
    });
  }

  async send(push: Parameters<PushProvider["send"]>[0]): Promise<PushOutcome> {
    try {
      const res = await this.#client.request({
        method: "POST",
        url: this.#url,
        headers: { "content-type": "application/json" },
        body: JSON.stringify(push),
      });
      if (res.status === 410) return "token-gone";
      return res.status < 300 ? "sent" : "failed";
    } catch {
      return "failed";
    }
  }

  close(): void {
    this.#client.close();
  }
}
