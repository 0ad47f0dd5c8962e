/**
 * The history store on both SQL engines, as contract-suite backends (PGlite in memory, a
 * fresh PostgreSQL schema), and small builders the history tests share.
 */
import { randomUUID } from "node:crypto";
import type { Database } from "@casebook/infra/sql/sql";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { sqlBackends } from "@casebook/lab/sql-backends";
import type { ChatKind } from "../src/domain/conversation.ts";
import type { NewMessage } from "../src/domain/history-port.ts";
import { HistoryStore } from "../src/store/history-store.ts";
import { migrateChatStore } from "../src/store/migrate.ts";

export interface HistorySubject {
  readonly db: Database;
  readonly history: HistoryStore;
  readonly ids: SnowflakeGenerator;
}

export function historyBackends() {
  return sqlBackends<HistorySubject>({
    system: "chat",
    prefix: "chat_history",
    prepare: migrateChatStore,
    subject: (db) => ({
      db,
      history: new HistoryStore(db),
      ids: new SnowflakeGenerator({ clock: systemClock, workerId: 1 }),
    }),
  });
}

/** A new conversation of `kind` with `members` (the first creates it); returns its id. */
export async function newChat(
  subject: HistorySubject,
  kind: ChatKind,
  members: readonly string[],
): Promise<bigint> {
  const { conversation } = await subject.history.createConversation({
    id: subject.ids.next(),
    kind,
    title: kind === "direct" ? undefined : `${kind} ${members.length}`,
    createdBy: members[0]!,
    members,
    nowMs: Date.now(),
  });
  return conversation.id;
}

export function newMessage(
  chatId: bigint,
  ids: { next(): bigint },
  fields: Partial<NewMessage> & { senderId: string },
  clock: Clock = systemClock,
): NewMessage {
  return {
    chatId,
    id: ids.next(),
    clientMsgId: randomUUID(),
    senderDevice: "phone",
    body: "hello",
    nowMs: clock.nowMs(),
    ...fields,
  };
}
