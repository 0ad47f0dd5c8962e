/**
 * The client's side of typing indicators: what the user's own `typing` calls may send (one
 * per conversation per `throttleMs` — the gateway drops any more) and who is typing in each
 * conversation, each indicator expiring after the `expiresInMs` its frame carried, or as soon
 * as a message of that user arrives. Bounded: `MAX_CHATS` conversations remembered each way.
 *
 * @example
 * const typing = new TypingState();
 * typing.mayAnnounce("42", now);                     // true: send a typing frame
 * typing.heard({ chatId: "42", userId: "bruno", expiresInMs: 6000 }, now);
 * typing.typers("42", now);                          // ["bruno"] until now + 6 s
 */

/** At least the gateway's throttle (3 s), so a client that follows it is never dropped. */
export const TYPING_ANNOUNCE_EVERY_MS = 3_000;
const MAX_CHATS = 64;

export interface TypingHeard {
  readonly chatId: string;
  readonly userId: string;
  readonly expiresInMs: number;
}

export class TypingState {
  readonly #announcedMs = new Map<string, number>();
  readonly #typers = new Map<string, Map<string, number>>();
  readonly #throttleMs: number;

  constructor(throttleMs = TYPING_ANNOUNCE_EVERY_MS) {
    this.#throttleMs = throttleMs;
  }

  /** True when a typing frame for this conversation may go now (and records that it went). */
  mayAnnounce(chatId: string, nowMs: number): boolean {
    const last = this.#announcedMs.get(chatId);
    if (last !== undefined && nowMs - last < this.#throttleMs) return false;
    remember(this.#announcedMs, chatId, nowMs);
    return true;
  }

  heard(frame: TypingHeard, nowMs: number): void {
    const typers = this.#typers.get(frame.chatId) ?? new Map<string, number>();
    typers.set(frame.userId, nowMs + Math.min(Math.max(frame.expiresInMs, 0), 60_000));
    remember(this.#typers, frame.chatId, typers);
  }

  /** A message of the user arrived: they stopped typing it. */
  messageFrom(chatId: string, userId: string): void {
    this.#typers.get(chatId)?.delete(userId);
  }

  /** Who is typing in the conversation now, sorted. */
  typers(chatId: string, nowMs: number): string[] {
    const typers = this.#typers.get(chatId);
    if (!typers) return [];
    for (const [userId, untilMs] of typers) if (untilMs <= nowMs) typers.delete(userId);
    return [...typers.keys()].sort();
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  while (map.size > MAX_CHATS) map.delete(map.keys().next().value!);
}
