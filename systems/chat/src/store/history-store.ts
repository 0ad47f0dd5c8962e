/**
 * The durable history on PostgreSQL or PGlite (the `HistoryPort` of the domain): the only
 * file that speaks SQL about conversations and messages. Schema: `migrations/`.
 *
 * Order and idempotency live in the statements, not in the callers:
 * - direct and group (CH-06): the conversation row is updated with `last_seq = last_seq + 1
 *   … RETURNING last_seq` inside the send transaction; the row lock makes every other send
 *   of that conversation wait until this one commits, so seqs commit in increasing order
 *   and a reader never sees 7 before 6;
 * - the client_msg_id (CH-09) is looked up first and the insert is conditional
 *   (`ON CONFLICT (chat_id, client_msg_id) DO NOTHING`): a resend racing its original
 *   finds the first row, and the counter increment of the loser is rolled back with it;
 * - channel (CH-07/CH-08): no lock on the hot row at send; the row is inserted with no seq,
 *   and `stampChannel` numbers committed rows in batches under the row's lock.
 *
 * @example
 * const history = new HistoryStore(db);
 * await history.append({ chatId, id, clientMsgId, senderId, senderDevice, body, nowMs });
 */

import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { isForeignKeyViolation, isUniqueViolation, sqlState } from "@casebook/infra/sql/sql-state";
import { assert } from "@casebook/kit/assert";
import { CasebookError } from "@casebook/kit/errors";
import { GroupCommit } from "@casebook/kit/group-commit";
import {
  type ChatKind,
  type Conversation,
  directKey,
  MAX_UNREAD_COUNT,
  type Message,
  type MessageKind,
  membersMax,
} from "../domain/conversation.ts";
import type { AppendResult, HistoryPort, NewConversation, NewMessage } from "../domain/history-port.ts";
import type { MediaRef } from "../domain/media.ts";
import type { Pointer, Receipt, ReceiptMove } from "../domain/receipts.ts";
import { errors } from "../errors.ts";
import { enqueueChannelEvent } from "./channel-event-outbox.ts";

interface ConversationRow {
  id: bigint;
  kind: ChatKind;
  title: string | null;
  created_by: string;
  created_at: Date;
  last_seq: bigint;
  last_message_at: Date | null;
  member_count: number;
  unread?: number;
}

interface MessageRow {
  chat_id: bigint;
  id: bigint;
  seq: bigint | null;
  client_msg_id: string;
  sender_id: string;
  sender_device: string;
  body: string;
  created_at: Date;
  delivered_at: Date | null;
  read_at: Date | null;
  kind: MessageKind;
  target_id: bigint | null;
  edited_at: Date | null;
  deleted_at: Date | null;
  media: MediaRef | null;
}

const CONVERSATION_COLUMNS =
  "c.id, c.kind, c.title, c.created_by, c.created_at, c.last_seq, c.last_message_at, c.member_count";
const MESSAGE_COLUMNS =
  "chat_id, id, seq, client_msg_id, sender_id, sender_device, body, created_at, delivered_at, read_at, kind, target_id, edited_at, deleted_at, media";

function conversationOf(row: ConversationRow): Conversation {
  return {
    id: row.id,
    kind: row.kind,
    title: row.title ?? undefined,
    createdBy: row.created_by,
    createdAtMs: row.created_at.getTime(),
    lastSeq: row.last_seq,
    lastMessageAtMs: row.last_message_at?.getTime(),
    memberCount: row.member_count,
    ...(row.unread === undefined ? {} : { unread: Number(row.unread) }),
  };
}

function messageOf(row: MessageRow): Message {
  return {
    chatId: row.chat_id,
    id: row.id,
    seq: row.seq ?? undefined,
    clientMsgId: row.client_msg_id,
    senderId: row.sender_id,
    senderDevice: row.sender_device,
    body: row.body,
    createdAtMs: row.created_at.getTime(),
    deliveredAtMs: row.delivered_at?.getTime(),
    readAtMs: row.read_at?.getTime(),
    kind: row.kind,
    targetId: row.target_id ?? undefined,
    editedAtMs: row.edited_at?.getTime(),
    deletedAtMs: row.deleted_at?.getTime(),
    media: row.media ?? undefined,
  };
}

/** Thrown inside a transaction to roll it back when a concurrent resend won. */
class ResendWon extends Error {}

/**
 * Text sends per batched statement, and waiting at most: a gateway keeps ≤ 256 sends in flight
 * to the send service, so a single gateway fills a batch of 64 and 16 cannot pass 4,096 waiting.
 */
export const DEFAULT_SEND_BATCH = { maxBatch: 64, maxPending: 4_096 };

/** migration 007's SQLSTATE: a concurrent resend committed first; PostgreSQL's deadlock. */
const BATCH_LOST_RACE = "CH001";
const DEADLOCK_DETECTED = "40P01";

type BatchRow = { n: number | bigint; chat_kind: ChatKind | null; recipients: string[] | null } & {
  [K in keyof MessageRow]: MessageRow[K] | null;
};

/**
 * `input` numbers the items (n, arrival order); `allowed` keeps those whose sender is a member;
 * `existing` finds a stored client_msg_id; `fresh` keeps the first item of each new
 * (chat, client_msg_id) in a counted conversation, numbered k within its conversation;
 * `locked` takes the conversations' row locks in id order (two send services' batches in
 * flight at once lock in one order and do not deadlock each other);
 * `bumped` moves each counter once by its count; `inserted` writes the rows; `guard` fails the
 * statement when an insert found a row committed meanwhile (a resend won), so the counters'
 * moves are rolled back with it.
 */
const SEND_BATCH_SQL = `
WITH input AS (
  SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
    WITH ORDINALITY AS i(chat_id, id, client_msg_id, sender_id, sender_device, body, created_at, n)
), allowed AS (
  SELECT i.*, c.kind FROM input i JOIN conversations c ON c.id = i.chat_id
  WHERE EXISTS (SELECT 1 FROM members m WHERE m.chat_id = i.chat_id AND m.user_id = i.sender_id)
), existing AS (
  SELECT a.n, ${MESSAGE_COLUMNS.split(", ")
    .map((c) => `m.${c}`)
    .join(", ")}
  FROM allowed a JOIN messages m ON m.chat_id = a.chat_id AND m.client_msg_id = a.client_msg_id
), fresh AS (
  SELECT a.*, row_number() OVER (PARTITION BY a.chat_id ORDER BY a.n) AS k FROM allowed a
  WHERE a.kind <> 'channel'
    AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = a.n)
    AND a.n = (SELECT min(b.n) FROM allowed b WHERE b.chat_id = a.chat_id AND b.client_msg_id = a.client_msg_id)
), locked AS (
  SELECT c.id FROM conversations c WHERE c.id IN (SELECT chat_id FROM fresh) ORDER BY c.id FOR UPDATE
), bumped AS (
  UPDATE conversations c SET last_seq = c.last_seq + f.count, last_message_at = f.at
  FROM (SELECT chat_id, count(*) AS count, max(created_at) AS at FROM fresh GROUP BY chat_id) f
  WHERE c.id = f.chat_id AND c.id IN (SELECT id FROM locked)
  RETURNING c.id, c.last_seq, f.count
), inserted AS (
  INSERT INTO messages (chat_id, id, seq, client_msg_id, sender_id, sender_device, body, created_at, kind, target_id)
  SELECT f.chat_id, f.id, b.last_seq - b.count + f.k, f.client_msg_id, f.sender_id, f.sender_device, f.body, f.created_at, 'text', NULL
  FROM fresh f JOIN bumped b ON b.id = f.chat_id
  ON CONFLICT (chat_id, client_msg_id) DO NOTHING
  RETURNING ${MESSAGE_COLUMNS}
), guard AS (
  SELECT CASE WHEN (SELECT count(*) FROM inserted) < (SELECT count(*) FROM fresh)
    THEN chat_send_batch_lost_race() ELSE 0 END AS ok
)
SELECT i.n, a.kind AS chat_kind, ${MESSAGE_COLUMNS.split(", ")
  .map((c) => `coalesce(ins.${c}, e.${c}) AS ${c}`)
  .join(", ")},
  CASE WHEN ins.id = i.id THEN (SELECT array_agg(m.user_id) FROM members m WHERE m.chat_id = i.chat_id) END AS recipients
FROM input i CROSS JOIN guard g
LEFT JOIN allowed a ON a.n = i.n
LEFT JOIN inserted ins ON ins.chat_id = i.chat_id AND ins.client_msg_id = i.client_msg_id
LEFT JOIN existing e ON e.n = i.n
WHERE g.ok = 0
ORDER BY i.n`;

function batchParams(batch: readonly NewMessage[]): unknown[] {
  return [
    batch.map((m) => String(m.chatId)),
    batch.map((m) => String(m.id)),
    batch.map((m) => m.clientMsgId),
    batch.map((m) => m.senderId),
    batch.map((m) => m.senderDevice),
    batch.map((m) => m.body),
    batch.map((m) => new Date(m.nowMs).toISOString()),
  ];
}

export class HistoryStore implements HistoryPort {
  readonly #db: Database;
  /** Text sends of direct and group chats, written together (undefined: one by one). */
  readonly #texts: GroupCommit<NewMessage, AppendResult | CasebookError | undefined> | undefined;
  readonly #onSendBatch: ((size: number) => void) | undefined;

  /**
   * `sendBatch` groups concurrent text sends, across conversations, into one statement
   * (`maxBatch` items; `maxPending` waiting, more refused with GROUP_COMMIT_QUEUE_FULL, 503);
   * default DEFAULT_SEND_BATCH. With `false` each send is its own transaction, as edits,
   * deletes and channel sends always are.
   */
  constructor(
    db: Database,
    options: {
      sendBatch?: { maxBatch: number; maxPending: number } | false;
      /** Each batched statement's size, for /metrics. */
      onSendBatch?: (size: number) => void;
    } = {},
  ) {
    this.#db = db;
    this.#onSendBatch = options.onSendBatch;
    const sendBatch = options.sendBatch ?? DEFAULT_SEND_BATCH;
    this.#texts =
      sendBatch === false ? undefined : new GroupCommit((batch) => this.#appendTexts(batch), sendBatch);
  }

  /** Batches written and text sends in them (undefined when sends go one by one). */
  get sendBatchStats(): { batches: number; items: number } | undefined {
    return this.#texts?.stats;
  }

  /**
   * The batched send: for every item at once, in ONE statement (one round trip, one commit) —
   * the membership check, the lookup of a stored client_msg_id (CH-09), each conversation's
   * counter moved by its number of new messages (`UPDATE … FROM`: the row lock serializes
   * with every other send of that conversation, CH-06), the conditional inserts with seqs
   * `last_seq - n + 1 … last_seq` in arrival order, and each new message's members for the
   * delivery (no second query). Per item: the stored message, the first one for a resend,
   * `undefined` for a channel (the one-by-one way: it has no counter to take), or
   * CHAT_NOT_FOUND. If a concurrent resend committed first, the statement fails as a whole
   * (migration 007) and so does a deadlock between two send services' batches: every item
   * then goes the one-by-one way, which handles both.
   */
  async #appendTexts(batch: readonly NewMessage[]): Promise<(AppendResult | CasebookError | undefined)[]> {
    this.#onSendBatch?.(batch.length);
    let rows: BatchRow[];
    try {
      ({ rows } = await this.#db.query<BatchRow>(SEND_BATCH_SQL, batchParams(batch), {
        name: "chat_send_batch",
      }));
    } catch (err) {
      if (sqlState(err) !== BATCH_LOST_RACE && sqlState(err) !== DEADLOCK_DETECTED) throw err;
      return batch.map(() => undefined);
    }
    const byItem = new Map(rows.map((row) => [Number(row.n), row]));
    return batch.map((input, i) => {
      const row = byItem.get(i + 1);
      // Returned, not thrown: a throw here would reject every send of the batch, whose
      // neighbours were stored (and a client told "not found" for a stored message never resends it).
      if (row === undefined || row.chat_kind === null)
        return errors.create("CHAT_NOT_FOUND", { fields: { chatId: String(input.chatId) } });
      if (row.chat_kind === "channel" || row.id === null) return undefined;
      const created = row.id === input.id;
      return {
        message: messageOf(row as MessageRow),
        kind: row.chat_kind,
        created,
        ...(created && row.recipients ? { recipients: row.recipients } : {}),
      };
    });
  }

  async createConversation(
    input: NewConversation,
  ): Promise<{ conversation: Conversation; created: boolean }> {
    const members = [...new Set(input.members)];
    const key = input.kind === "direct" ? directKey(members[0]!, members[1]!) : null;
    assert(members.includes(input.createdBy), "the creator is a member");
    assert(members.length <= membersMax(input.kind), "member count checked by the caller");
    return this.#db.transaction(async (tx) => {
      const inserted = await tx.query<{ id: bigint }>(
        `INSERT INTO conversations (id, kind, title, direct_key, created_by, created_at, member_count)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (direct_key) DO NOTHING RETURNING id`,
        [
          String(input.id),
          input.kind,
          input.title ?? null,
          key,
          input.createdBy,
          new Date(input.nowMs),
          members.length,
        ],
      );
      if (inserted.rowCount === 0) {
        const { rows } = await tx.query<ConversationRow>(
          `SELECT ${CONVERSATION_COLUMNS} FROM conversations c WHERE c.direct_key = $1`,
          [key],
        );
        return { conversation: conversationOf(rows[0]!), created: false };
      }
      await tx.query(
        "INSERT INTO members (chat_id, user_id, joined_at) SELECT $1, u, $3 FROM unnest($2::text[]) AS u",
        [String(input.id), members, new Date(input.nowMs)],
      );
      const { rows } = await tx.query<ConversationRow>(
        `SELECT ${CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = $1`,
        [String(input.id)],
      );
      return { conversation: conversationOf(rows[0]!), created: true };
    });
  }

  async addMembers(
    chatId: bigint,
    actor: string,
    userIds: readonly string[],
    nowMs: number,
  ): Promise<number> {
    return this.#db.transaction(async (tx) => {
      // The row lock serializes additions, so two concurrent ones cannot both pass the limit.
      const { rows } = await tx.query<{ kind: ChatKind; member_count: number }>(
        `SELECT c.kind, c.member_count FROM conversations c
         WHERE c.id = $1 AND EXISTS (SELECT 1 FROM members m WHERE m.chat_id = c.id AND m.user_id = $2)
         FOR UPDATE`,
        [String(chatId), actor],
      );
      const row = rows[0];
      if (!row) throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: String(chatId) } });
      if (row.kind === "direct")
        throw errors.create("CHAT_DIRECT_FIXED", { fields: { chatId: String(chatId) } });
      const added = await tx.query(
        `INSERT INTO members (chat_id, user_id, joined_at) SELECT $1, u, $3 FROM unnest($2::text[]) AS u
         ON CONFLICT DO NOTHING`,
        [String(chatId), [...new Set(userIds)], new Date(nowMs)],
      );
      const count = row.member_count + added.rowCount;
      const max = membersMax(row.kind);
      if (count > max) {
        throw errors.create("CHAT_MEMBERS_TOO_MANY", {
          fields: { chatId: String(chatId), max, wouldBe: count },
        });
      }
      await tx.query("UPDATE conversations SET member_count = $2 WHERE id = $1", [String(chatId), count]);
      return count;
    });
  }

  async conversation(chatId: bigint, viewer: string): Promise<Conversation> {
    const { rows } = await this.#db.query<ConversationRow>(
      `SELECT ${CONVERSATION_COLUMNS} FROM conversations c JOIN members m ON m.chat_id = c.id AND m.user_id = $2
       WHERE c.id = $1`,
      [String(chatId), viewer],
    );
    if (!rows[0]) throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: String(chatId) } });
    return conversationOf(rows[0]);
  }

  async members(chatId: bigint, viewer: string): Promise<string[]> {
    await this.conversation(chatId, viewer);
    const { rows } = await this.#db.query<{ user_id: string }>(
      "SELECT user_id FROM members WHERE chat_id = $1 ORDER BY user_id",
      [String(chatId)],
    );
    return rows.map((row) => row.user_id);
  }

  async append(input: NewMessage): Promise<AppendResult> {
    // Media sends are rare and go one by one: the batched statement stays text only.
    if (input.change === undefined && input.media === undefined && this.#texts !== undefined) {
      const batched = await this.#texts.submit(input);
      if (batched instanceof CasebookError) throw batched;
      if (batched !== undefined) return batched;
    }
    return this.#appendOne(input);
  }

  /** One message in its own transaction: edits, deletes, channels, and a batch's fallback. */
  async #appendOne(input: NewMessage): Promise<AppendResult> {
    const kind = await this.#kindFor(this.#db, input.chatId, input.senderId);
    try {
      const message = await this.#db.transaction((tx) =>
        kind === "channel" ? this.#appendUnnumbered(tx, input) : this.#appendCounted(tx, input, kind),
      );
      return message ?? { message: await this.#byClientMsgId(input), kind, created: false };
    } catch (err) {
      if (err instanceof ResendWon)
        return { message: await this.#byClientMsgId(input), kind, created: false };
      if (isUniqueViolation(err, "messages_pkey")) {
        throw errors.create("CHAT_ID_TAKEN", { fields: { id: String(input.id) }, cause: err });
      }
      // The media row went between the send's check and this insert: the orphan sweep took it.
      if (input.media !== undefined && isForeignKeyViolation(err)) {
        throw errors.create("CHAT_MEDIA_NOT_FOUND", {
          fields: { field: "mediaId", mediaId: input.media.id },
          cause: err,
        });
      }
      throw err;
    }
  }

  async #kindFor(q: Queryable, chatId: bigint, userId: string): Promise<ChatKind> {
    const { rows } = await q.query<{ kind: ChatKind }>(
      `SELECT c.kind FROM conversations c JOIN members m ON m.chat_id = c.id AND m.user_id = $2 WHERE c.id = $1`,
      [String(chatId), userId],
      { name: "chat_kind_for" },
    );
    if (!rows[0]) throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: String(chatId) } });
    return rows[0].kind;
  }

  /** Direct/group: the counter is taken and the row inserted in one transaction (CH-06). */
  async #appendCounted(tx: Queryable, input: NewMessage, kind: ChatKind): Promise<AppendResult | undefined> {
    const existing = await this.#existing(tx, input);
    if (existing) return { message: existing, kind, created: false };
    const repeated = await this.#checkChange(tx, input);
    if (repeated) return { message: repeated, kind, created: false };
    // An edit or a delete takes a seq but does not move the conversation up the list.
    const counter = await tx.query<{ last_seq: bigint }>(
      `UPDATE conversations SET last_seq = last_seq + 1,
         last_message_at = CASE WHEN $3 THEN $2 ELSE last_message_at END WHERE id = $1 RETURNING last_seq`,
      [String(input.chatId), new Date(input.nowMs), input.change === undefined],
      { name: "chat_counter_next" },
    );
    const seq = counter.rows[0]!.last_seq;
    const row = await this.#insert(tx, input, seq);
    // Waiting for the row lock, a concurrent resend of this client_msg_id committed: undo our increment.
    if (!row) throw new ResendWon();
    await this.#applyChange(tx, input);
    return { message: messageOf(row), kind, created: true };
  }

  /** Channel: no lock on the conversation row; `seq` comes later from stampChannel (CH-08). */
  async #appendUnnumbered(tx: Queryable, input: NewMessage): Promise<AppendResult | undefined> {
    const existing = await this.#existing(tx, input);
    if (existing) return { message: existing, kind: "channel", created: false };
    const repeated = await this.#checkChange(tx, input);
    if (repeated) return { message: repeated, kind: "channel", created: false };
    const row = await this.#insert(tx, input, null);
    if (!row) return undefined;
    await this.#applyChange(tx, input);
    // Its one stream event, in the same transaction (CH-20): published at least once.
    await enqueueChannelEvent(tx, input.chatId, input.id, input.nowMs);
    return { message: messageOf(row), kind: "channel", created: true };
  }

  /**
   * An edit or a delete: locks its target (two changes of one message serialize on it) and
   * checks it is a text message of this sender that is not deleted. A delete of a tombstone
   * returns the first delete event: deleting twice is one delete.
   */
  async #checkChange(tx: Queryable, input: NewMessage): Promise<Message | undefined> {
    const change = input.change;
    if (!change) return undefined;
    const field = { chatId: String(input.chatId), field: "messageId", messageId: String(change.targetId) };
    const { rows } = await tx.query<{ sender_id: string; deleted_at: Date | null }>(
      "SELECT sender_id, deleted_at FROM messages WHERE chat_id = $1 AND id = $2 AND kind = 'text' FOR UPDATE",
      [String(input.chatId), String(change.targetId)],
    );
    const target = rows[0];
    if (!target) throw errors.create("CHAT_MESSAGE_NOT_FOUND", { fields: field });
    if (target.sender_id !== input.senderId)
      throw errors.create("CHAT_MESSAGE_NOT_SENDER", { fields: field });
    if (target.deleted_at === null) return undefined;
    if (change.kind === "edit") throw errors.create("CHAT_MESSAGE_DELETED", { fields: field });
    const first = await tx.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 AND target_id = $2 AND kind = 'delete'
       ORDER BY id LIMIT 1`,
      [String(input.chatId), String(change.targetId)],
    );
    assert(first.rows[0] !== undefined, "a tombstone has its delete event");
    return messageOf(first.rows[0]);
  }

  /** Rewrites the target in the same transaction as its event row. */
  async #applyChange(tx: Queryable, input: NewMessage): Promise<void> {
    const change = input.change;
    if (!change) return;
    const at = new Date(input.nowMs);
    const chatId = String(input.chatId);
    const target = String(change.targetId);
    if (change.kind === "edit") {
      await tx.query("UPDATE messages SET body = $3, edited_at = $4 WHERE chat_id = $1 AND id = $2", [
        chatId,
        target,
        input.body,
        at,
      ]);
      return;
    }
    await tx.query(
      "UPDATE messages SET body = '', media = NULL, deleted_at = $3 WHERE chat_id = $1 AND id = $2",
      [chatId, target, at],
    );
    await tx.query("UPDATE messages SET body = '' WHERE chat_id = $1 AND target_id = $2 AND kind = 'edit'", [
      chatId,
      target,
    ]);
  }

  async #existing(q: Queryable, input: NewMessage): Promise<Message | undefined> {
    const { rows } = await q.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 AND client_msg_id = $2`,
      [String(input.chatId), input.clientMsgId],
      { name: "chat_message_by_client_id" },
    );
    return rows[0] && messageOf(rows[0]);
  }

  async #insert(q: Queryable, input: NewMessage, seq: bigint | null): Promise<MessageRow | undefined> {
    const { rows } = await q.query<MessageRow>(
      `INSERT INTO messages (chat_id, id, seq, client_msg_id, sender_id, sender_device, body, created_at, kind, target_id, media)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb)
       ON CONFLICT (chat_id, client_msg_id) DO NOTHING RETURNING ${MESSAGE_COLUMNS}`,
      [
        String(input.chatId),
        String(input.id),
        seq === null ? null : String(seq),
        input.clientMsgId,
        input.senderId,
        input.senderDevice,
        input.change?.kind === "delete" ? "" : input.body,
        new Date(input.nowMs),
        input.change?.kind ?? "text",
        input.change ? String(input.change.targetId) : null,
        input.media === undefined ? null : JSON.stringify(input.media),
      ],
      { name: "chat_message_insert" },
    );
    return rows[0];
  }

  async #byClientMsgId(input: NewMessage): Promise<Message> {
    const found = await this.#existing(this.#db, input);
    assert(found !== undefined, "a client_msg_id conflict leaves the first row in place");
    return found;
  }

  /** One message by its id (no viewer check: the channel event relay's own read). */
  async messageById(chatId: bigint, id: bigint): Promise<Message | undefined> {
    const { rows } = await this.#db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 AND id = $2`,
      [String(chatId), String(id)],
      { name: "chat_message_by_id" },
    );
    return rows[0] && messageOf(rows[0]);
  }

  async stampChannel(chatId: bigint, maxBatch: number): Promise<Map<bigint, bigint>> {
    return this.#db.transaction(async (tx) => {
      // FOR UPDATE re-reads the row after a concurrent stamp committed, and the next
      // statement's snapshot sees that stamp's rows: offsets never repeat and never skip.
      const locked = await tx.query<{ last_seq: bigint }>(
        "SELECT last_seq FROM conversations WHERE id = $1 AND kind = 'channel' FOR UPDATE",
        [String(chatId)],
      );
      if (!locked.rows[0]) return new Map();
      const base = locked.rows[0].last_seq;
      const { rows } = await tx.query<{ id: bigint; seq: bigint }>(
        `WITH pending AS (
           SELECT id, row_number() OVER (ORDER BY id) AS n FROM messages
           WHERE chat_id = $1 AND seq IS NULL ORDER BY id LIMIT $3
         )
         UPDATE messages m SET seq = $2::bigint + p.n FROM pending p
         WHERE m.chat_id = $1 AND m.id = p.id RETURNING m.id, m.seq`,
        [String(chatId), String(base), maxBatch],
      );
      if (rows.length === 0) return new Map();
      await tx.query("UPDATE conversations SET last_seq = $2, last_message_at = now() WHERE id = $1", [
        String(chatId),
        String(base + BigInt(rows.length)),
      ]);
      return new Map(rows.map((row) => [row.id, row.seq]));
    });
  }

  async seqOf(chatId: bigint, id: bigint): Promise<bigint | undefined> {
    const { rows } = await this.#db.query<{ seq: bigint | null }>(
      "SELECT seq FROM messages WHERE chat_id = $1 AND id = $2",
      [String(chatId), String(id)],
    );
    return rows[0]?.seq ?? undefined;
  }

  async after(chatId: bigint, viewer: string, afterSeq: bigint, limit: number): Promise<Message[]> {
    await this.#kindFor(this.#db, chatId, viewer);
    const { rows } = await this.#db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
      [String(chatId), String(afterSeq), limit],
      { name: "chat_history_after" },
    );
    return rows.map(messageOf);
  }

  async before(
    chatId: bigint,
    viewer: string,
    beforeSeq: bigint | undefined,
    limit: number,
  ): Promise<Message[]> {
    await this.#kindFor(this.#db, chatId, viewer);
    const { rows } = await this.#db.query<MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = $1 AND seq IS NOT NULL AND ($2::bigint IS NULL OR seq < $2)
       ORDER BY seq DESC LIMIT $3`,
      [String(chatId), beforeSeq === undefined ? null : String(beforeSeq), limit],
      { name: "chat_history_before" },
    );
    return rows.map(messageOf);
  }

  async recipients(chatId: bigint): Promise<string[]> {
    const { rows } = await this.#db.query<{ user_id: string }>(
      "SELECT user_id FROM members WHERE chat_id = $1",
      [String(chatId)],
      { name: "chat_recipients" },
    );
    return rows.map((row) => row.user_id);
  }

  async memberSlice(
    chatId: bigint,
    slice: number,
    slices: number,
    afterUserId: string,
    limit: number,
  ): Promise<string[]> {
    // hashtext is int4; shifted into 0..2^32-1 before the modulo (abs(-2^31) would overflow).
    const { rows } = await this.#db.query<{ user_id: string }>(
      `SELECT user_id FROM members
       WHERE chat_id = $1 AND mod(hashtext(user_id)::bigint + 2147483648, $3) = $2 AND user_id > $4
       ORDER BY user_id LIMIT $5`,
      [String(chatId), slice, slices, afterUserId, limit],
      { name: "chat_member_slice" },
    );
    return rows.map((row) => row.user_id);
  }

  async conversationsOf(userId: string, limit: number): Promise<Conversation[]> {
    // Unread is derived, not stored: others' text messages, not deleted, after the furthest
    // read pointer of the user's devices (read on one device is read), counted by a range
    // scan on (chat_id, seq) that stops at MAX_UNREAD_COUNT.
    const { rows } = await this.#db.query<ConversationRow>(
      `SELECT ${CONVERSATION_COLUMNS},
         (SELECT count(*) FROM (
            SELECT 1 FROM messages x
            WHERE x.chat_id = c.id
              AND x.seq > COALESCE((SELECT max(p.read_seq) FROM pointers p WHERE p.chat_id = c.id AND p.user_id = $1), 0)
              AND x.kind = 'text' AND x.deleted_at IS NULL AND x.sender_id <> $1
            LIMIT $3) AS u)::int AS unread
       FROM members m JOIN conversations c ON c.id = m.chat_id
       WHERE m.user_id = $1 ORDER BY c.last_message_at DESC NULLS LAST, c.id DESC LIMIT $2`,
      [userId, limit, MAX_UNREAD_COUNT],
    );
    return rows.map(conversationOf);
  }

  async receipt(r: Receipt): Promise<ReceiptMove | undefined> {
    return this.#db.transaction(async (tx) => {
      const chat = await tx.query<{ last_seq: bigint }>(
        `SELECT c.last_seq FROM conversations c JOIN members m ON m.chat_id = c.id AND m.user_id = $2 WHERE c.id = $1`,
        [String(r.chatId), r.userId],
      );
      if (!chat.rows[0]) throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: String(r.chatId) } });
      if (r.seq > chat.rows[0].last_seq) {
        throw errors.create("CHAT_RECEIPT_INVALID", {
          fields: { field: "seq", lastSeq: String(chat.rows[0].last_seq) },
        });
      }
      // The row lock orders two receipts of one device; GREATEST keeps the pointer monotonic.
      await tx.query(
        `INSERT INTO pointers (chat_id, user_id, device_id, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (chat_id, user_id, device_id) DO NOTHING`,
        [String(r.chatId), r.userId, r.deviceId, new Date(r.nowMs)],
      );
      const { rows } = await tx.query<{ delivered_seq: bigint; read_seq: bigint }>(
        "SELECT delivered_seq, read_seq FROM pointers WHERE chat_id = $1 AND user_id = $2 AND device_id = $3 FOR UPDATE",
        [String(r.chatId), r.userId, r.deviceId],
      );
      const before = r.kind === "read" ? rows[0]!.read_seq : rows[0]!.delivered_seq;
      if (r.seq <= before) return undefined;
      await tx.query(
        `UPDATE pointers SET delivered_seq = GREATEST(delivered_seq, $4),
           read_seq = CASE WHEN $5 THEN GREATEST(read_seq, $4) ELSE read_seq END, updated_at = $6
         WHERE chat_id = $1 AND user_id = $2 AND device_id = $3`,
        [String(r.chatId), r.userId, r.deviceId, String(r.seq), r.kind === "read", new Date(r.nowMs)],
      );
      const column = r.kind === "read" ? "read_at" : "delivered_at";
      const stamped = await tx.query<{ sender_id: string }>(
        `UPDATE messages SET ${r.kind === "read" ? "read_at = $5, delivered_at = COALESCE(delivered_at, $5)" : "delivered_at = $5"}
         WHERE chat_id = $1 AND seq > $2 AND seq <= $3 AND sender_id <> $4 AND ${column} IS NULL
         RETURNING sender_id`,
        [String(r.chatId), String(before), String(r.seq), r.userId, new Date(r.nowMs)],
      );
      const senders = [...new Set(stamped.rows.map((row) => row.sender_id))];
      return { kind: r.kind, fromSeq: before, toSeq: r.seq, senders };
    });
  }

  async pointers(chatId: bigint, viewer: string): Promise<Pointer[]> {
    await this.#kindFor(this.#db, chatId, viewer);
    const { rows } = await this.#db.query<{ device_id: string; delivered_seq: bigint; read_seq: bigint }>(
      "SELECT device_id, delivered_seq, read_seq FROM pointers WHERE chat_id = $1 AND user_id = $2 ORDER BY device_id",
      [String(chatId), viewer],
    );
    return rows.map((row) => ({
      deviceId: row.device_id,
      deliveredSeq: row.delivered_seq,
      readSeq: row.read_seq,
    }));
  }

  async takeNodeId(): Promise<number> {
    const { rows } = await this.#db.query<{ id: bigint }>("SELECT nextval('node_ids') AS id");
    return Number(rows[0]!.id);
  }
}
