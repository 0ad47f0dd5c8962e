/**
 * The push path (CH-17, CH-18, CH-21, CH-22): a recipient with no live socket — none in the
 * session table, or one on a gateway that is gone — gets a push notification on each of
 * their devices' tokens, to wake the app; the app then reconnects and syncs after its
 * cursor, so the push carries only where to look (chat, seq) and a preview, never the only
 * copy. A token the provider reports gone is forgotten. A failed push is counted and
 * dropped: the message is in the history either way (CH-21: without push, the user sees it
 * on opening the app).
 *
 * @example
 * const push = new PushPath({ tokens, provider, onOutcome: (o) => metrics.pushes.inc({ outcome: o }) });
 * await push.notify(["bruno"], message);
 */
import type { Message } from "./conversation.ts";
import type { OfflinePort } from "./send-path.ts";

export interface DeviceToken {
  readonly userId: string;
  readonly deviceId: string;
  readonly platform: "apns" | "fcm";
  readonly token: string;
}

export interface PushTokens {
  tokensOf(userIds: readonly string[]): Promise<DeviceToken[]>;
  forget(token: string): Promise<void>;
}

export type PushOutcome = "sent" | "token-gone" | "failed";

export interface PushProvider {
  send(push: {
    platform: "apns" | "fcm";
    token: string;
    title: string;
    body: string;
    data: Record<string, string>;
  }): Promise<PushOutcome>;
}

/** Characters of the message shown in the notification. */
export const PREVIEW_CHARS = 100;

export class PushPath implements OfflinePort {
  readonly #tokens: PushTokens;
  readonly #provider: PushProvider;
  readonly #onOutcome: (outcome: PushOutcome) => void;

  constructor(options: {
    tokens: PushTokens;
    provider: PushProvider;
    onOutcome?: (outcome: PushOutcome) => void;
  }) {
    this.#tokens = options.tokens;
    this.#provider = options.provider;
    this.#onOutcome = options.onOutcome ?? (() => {});
  }

  async notify(userIds: readonly string[], message: Message): Promise<void> {
    const devices = await this.#tokens.tokensOf(userIds);
    await Promise.all(
      devices.map(async (device) => {
        const outcome = await this.#provider.send({
          platform: device.platform,
          token: device.token,
          title: message.senderId,
          body: message.body.slice(0, PREVIEW_CHARS),
          data: { chatId: String(message.chatId), seq: String(message.seq ?? ""), id: String(message.id) },
        });
        if (outcome === "token-gone") await this.#tokens.forget(device.token);
        this.#onOutcome(outcome);
      }),
    );
  }
}
