/**
 * Typing indicators: ephemeral — never written to PostgreSQL — and routed to the other
 * members' live devices through the same routing as messages (session table + the gateways'
 * pub/sub); a device with no socket simply misses them. Three bounds keep them cheap:
 *
 * - throttled: a connection forwards at most one `typing` per conversation per
 *   TYPING_THROTTLE_MS; the rest are dropped at the gateway (the client library throttles
 *   too, so a well-behaved app never hits the gateway's throttle);
 * - expiring: the frame carries `expiresInMs` (TYPING_TTL_MS, twice the throttle, so a user
 *   who keeps typing never flickers off); the receiver drops the indicator after it, or when a
 *   message of that user arrives — no "stopped typing" frame is needed or trusted;
 * - fanned out only in direct chats and groups (≤ 1,024 members), never to a channel.
 *
 * @example
 * const throttle = new TypingThrottle();
 * throttle.admit("42", nowMs); // true: forward
 * throttle.admit("42", nowMs + 100); // false: dropped
 */

export const TYPING_THROTTLE_MS = 3_000;
export const TYPING_TTL_MS = 2 * TYPING_THROTTLE_MS;
/** Conversations one connection's throttle remembers; the oldest is forgotten past it. */
export const MAX_TYPING_CHATS = 32;

export function typingFrame(chatId: bigint, userId: string, deviceId: string) {
  return { action: "typing", chatId: String(chatId), userId, deviceId, expiresInMs: TYPING_TTL_MS };
}

/** One connection's throttle: at most one typing per conversation per TYPING_THROTTLE_MS. */
export class TypingThrottle {
  readonly #lastMs = new Map<string, number>();
  readonly #intervalMs: number;

  constructor(intervalMs = TYPING_THROTTLE_MS) {
    this.#intervalMs = intervalMs;
  }

  admit(chatId: string, nowMs: number): boolean {
    const last = this.#lastMs.get(chatId);
    if (last !== undefined && nowMs - last < this.#intervalMs) return false;
    this.#lastMs.delete(chatId);
    this.#lastMs.set(chatId, nowMs);
    while (this.#lastMs.size > MAX_TYPING_CHATS) this.#lastMs.delete(this.#lastMs.keys().next().value!);
    return true;
  }
}
