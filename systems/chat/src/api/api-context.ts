/**
 * What the chat API's routes need, passed in once by main.ts (and by the tests).
 */
import type { Clock } from "@casebook/kit/clock";
import type { Conversation } from "../domain/conversation.ts";
import type { HistoryPort } from "../domain/history-port.ts";
import type { DeviceToken } from "../domain/push-path.ts";
import type { SendPath } from "../domain/send-path.ts";
import type { SessionTable } from "../domain/sessions.ts";
import type { MediaLibrary } from "./media-library.ts";
import type { UserTokens } from "./user-tokens.ts";

export interface ChatApiContext {
  readonly history: HistoryPort;
  readonly sendPath: SendPath;
  /** The session table: presence is read from it (typing goes through sendPath.route). */
  readonly sessions: SessionTable;
  /** Snowflake ids for new conversations and messages. */
  readonly ids: { next(): bigint };
  readonly tokens: UserTokens;
  /** The app backend's token for POST /v1/tokens (CHAT_ISSUER_TOKEN). */
  readonly issuerToken: string;
  readonly clock: Clock;
  readonly onSent?: (created: boolean) => void;
  /** A user token issued, a media upload authorized, a push token registered (for /metrics). */
  readonly onGranted?: (kind: "user_token" | "media_upload" | "push_token") => void;
  /** Where devices register their push tokens. */
  readonly pushTokens: { register(input: DeviceToken & { nowMs: number }): Promise<void> };
  /** Media by reference (CH-24): upload and download grants, and the reference a message carries. */
  readonly media: MediaLibrary;
}

export function conversationJson(c: Conversation) {
  return {
    id: String(c.id),
    kind: c.kind,
    title: c.title ?? null,
    createdBy: c.createdBy,
    createdAt: new Date(c.createdAtMs).toISOString(),
    lastSeq: String(c.lastSeq),
    lastMessageAt: c.lastMessageAtMs === undefined ? null : new Date(c.lastMessageAtMs).toISOString(),
    memberCount: c.memberCount,
    ...(c.unread === undefined ? {} : { unread: c.unread }),
  };
}
