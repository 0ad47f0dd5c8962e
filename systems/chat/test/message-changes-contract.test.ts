/**
 * Edit, delete and unread counts on the durable history, one suite on PGlite and on the real
 * PostgreSQL: an edit or a delete is an event with its own seq, seen in order by a reader
 * resuming after its cursor (CH-05, CH-06); the changed message is rewritten in the same
 * transaction (a tombstone for a delete); only the sender may change a message; a resend
 * (CH-09) and a repeated delete store nothing new; unread counts are derived from the read
 * pointers (CH-05, CH-25), never kept as a second counter.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { CommitOffsets } from "../src/domain/commit-offsets.ts";
import { MAX_UNREAD_COUNT } from "../src/domain/conversation.ts";
import type { HistoryPort } from "../src/domain/history-port.ts";
import { errors } from "../src/errors.ts";
import { type HistorySubject, historyBackends, newChat, newMessage } from "./history-fixture.ts";

async function unreadOf(history: HistoryPort, userId: string, chatId: bigint): Promise<number | undefined> {
  const list = await history.conversationsOf(userId, 100);
  return list.find((c) => c.id === chatId)?.unread;
}

contractSuite<HistorySubject>("chat message changes", historyBackends(), (it) => {
  it("CH-05 CH-06 an edit and a delete are events after the message: a reader resuming after its cursor sees them in order", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    const { message: typed } = await s.history.append(
      newMessage(chatId, s.ids, { senderId: "ana", body: "helo" }),
    );
    const cursor = typed.seq!;
    const edit = await s.history.append(
      newMessage(chatId, s.ids, {
        senderId: "ana",
        body: "hello",
        change: { kind: "edit", targetId: typed.id },
      }),
    );
    assert.equal(edit.created, true);
    assert.equal(edit.message.kind, "edit");
    assert.equal(edit.message.targetId, typed.id);
    assert.equal(edit.message.seq, cursor + 1n);
    const after = await s.history.after(chatId, "bruno", cursor, 10);
    assert.deepEqual(
      after.map((m) => [m.kind, m.body, m.targetId]),
      [["edit", "hello", typed.id]],
    );
    const [rewritten] = await s.history.after(chatId, "bruno", 0n, 1);
    assert.equal(rewritten!.body, "hello", "the message itself carries its last text");
    assert.ok(rewritten!.editedAtMs !== undefined);

    const deleted = await s.history.append(
      newMessage(chatId, s.ids, {
        senderId: "ana",
        body: "",
        change: { kind: "delete", targetId: typed.id },
      }),
    );
    assert.equal(deleted.message.seq, cursor + 2n);
    const all = await s.history.after(chatId, "bruno", 0n, 10);
    assert.deepEqual(
      all.map((m) => [String(m.seq), m.kind ?? "text", m.body]),
      [
        [String(cursor), "text", ""],
        [String(cursor + 1n), "edit", ""],
        [String(cursor + 2n), "delete", ""],
      ],
      "a tombstone: no version of the text stays readable",
    );
    assert.ok(all[0]!.deletedAtMs !== undefined);
  });

  it("CH-09 a resent edit and a repeated delete store nothing new; an edit of a tombstone is refused", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "caio"]);
    const { message } = await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
    const edit = newMessage(chatId, s.ids, {
      senderId: "ana",
      body: "v2",
      change: { kind: "edit", targetId: message.id },
    });
    const first = await s.history.append(edit);
    const again = await s.history.append({ ...edit, id: s.ids.next(), body: "v3" });
    assert.equal(again.created, false);
    assert.equal(again.message.id, first.message.id);
    const deletes = await Promise.all(
      [1, 2, 3].map(() =>
        s.history.append(
          newMessage(chatId, s.ids, {
            senderId: "ana",
            body: "",
            change: { kind: "delete", targetId: message.id },
          }),
        ),
      ),
    );
    assert.equal(deletes.filter((d) => d.created).length, 1, "three concurrent deletes: one event");
    assert.equal(new Set(deletes.map((d) => d.message.id)).size, 1);
    assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 3n, "text, edit, one delete");
    await assert.rejects(
      s.history.append(
        newMessage(chatId, s.ids, {
          senderId: "ana",
          body: "v4",
          change: { kind: "edit", targetId: message.id },
        }),
      ),
      (e) => errors.is(e, "CHAT_MESSAGE_DELETED"),
    );
  });

  it("only the sender changes a message; an unknown or non-text target is not found; nothing is stored", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    const { message } = await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
    const change = (senderId: string, targetId: bigint) =>
      s.history.append(
        newMessage(chatId, s.ids, { senderId, body: "x", change: { kind: "edit", targetId } }),
      );
    await assert.rejects(change("bruno", message.id), (e) => {
      assert.ok(errors.is(e, "CHAT_MESSAGE_NOT_SENDER"));
      assert.equal((e as unknown as { fields: { field: string } }).fields.field, "messageId");
      return true;
    });
    await assert.rejects(change("ana", message.id + 1n), (e) => errors.is(e, "CHAT_MESSAGE_NOT_FOUND"));
    const edit = await change("ana", message.id);
    await assert.rejects(change("ana", edit.message.id), (e) => errors.is(e, "CHAT_MESSAGE_NOT_FOUND"));
    await assert.rejects(change("eve", message.id), (e) => errors.is(e, "CHAT_NOT_FOUND"));
    assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 2n);
  });

  it("CH-07 a channel's edit is stamped a commit offset like any message", async (s) => {
    const chatId = await newChat(s, "channel", ["ana", "bruno"]);
    const offsets = new CommitOffsets(s.history, { maxBatch: 100, maxPending: 1_000 });
    const { message } = await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
    await offsets.offsetOf(chatId, message.id);
    const edit = await s.history.append(
      newMessage(chatId, s.ids, {
        senderId: "ana",
        body: "v2",
        change: { kind: "edit", targetId: message.id },
      }),
    );
    assert.equal(await offsets.offsetOf(chatId, edit.message.id), 2n);
    assert.deepEqual(
      (await s.history.after(chatId, "bruno", 1n, 10)).map((m) => m.kind),
      ["edit"],
    );
  });

  it("CH-05 CH-25 unread is derived from the read pointers: others' text after the furthest device, deletes and edits not counted", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno", "carla"]);
    const sent = [];
    for (let i = 0; i < 4; i++)
      sent.push(
        (await s.history.append(newMessage(chatId, s.ids, { senderId: "ana", body: `m${i}` }))).message,
      );
    await s.history.append(newMessage(chatId, s.ids, { senderId: "bruno", body: "mine" }));
    assert.equal(await unreadOf(s.history, "bruno", chatId), 4, "his own message is not unread");
    assert.equal(await unreadOf(s.history, "ana", chatId), 1);
    await s.history.append(
      newMessage(chatId, s.ids, {
        senderId: "ana",
        body: "m1!",
        change: { kind: "edit", targetId: sent[1]!.id },
      }),
    );
    await s.history.append(
      newMessage(chatId, s.ids, {
        senderId: "ana",
        body: "",
        change: { kind: "delete", targetId: sent[3]!.id },
      }),
    );
    assert.equal(
      await unreadOf(s.history, "bruno", chatId),
      3,
      "the edit is no new message; the deleted one is gone",
    );
    const read = (deviceId: string, seq: bigint) =>
      s.history.receipt({ chatId, userId: "bruno", deviceId, kind: "read", seq, nowMs: Date.now() });
    await read("laptop", sent[1]!.seq!);
    assert.equal(await unreadOf(s.history, "bruno", chatId), 1, "read on one device is read");
    await read("phone", sent[0]!.seq!);
    assert.equal(
      await unreadOf(s.history, "bruno", chatId),
      1,
      "the furthest device counts, not the last to report",
    );
    await s.history.receipt({
      chatId,
      userId: "bruno",
      deviceId: "phone",
      kind: "delivered",
      seq: 7n,
      nowMs: Date.now(),
    });
    assert.equal(await unreadOf(s.history, "bruno", chatId), 1, "delivered is not read");
    assert.equal(await unreadOf(s.history, "carla", chatId), 4, "ana's three and bruno's one");
  });

  it("unread stops counting at MAX_UNREAD_COUNT (a bounded scan)", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "dani"]);
    const rows = MAX_UNREAD_COUNT + 3;
    await s.db.query(
      `INSERT INTO messages (chat_id, id, seq, client_msg_id, sender_id, sender_device, body, created_at)
       SELECT $1, 1000 + g, g, gen_random_uuid(), 'ana', 'phone', 'x', now() FROM generate_series(1, $2::int) AS g`,
      [String(chatId), rows],
    );
    await s.db.query("UPDATE conversations SET last_seq = $2 WHERE id = $1", [String(chatId), rows]);
    assert.equal(await unreadOf(s.history, "dani", chatId), MAX_UNREAD_COUNT);
  });
});
