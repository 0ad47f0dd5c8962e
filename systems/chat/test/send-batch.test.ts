/**
 * The batched send (HistoryStore's group commit, one statement per batch): concurrent text
 * sends across conversations written together, each conversation's seqs still 1..n once and in
 * arrival order (CH-06), resends inside and across batches stored once (CH-09), a non-member's
 * send refused without failing its neighbours, and a batch that loses a race to a concurrent
 * resend rolled back whole and sent one by one — no seq skipped (CH-03).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { contractSuite } from "@casebook/lab/contract-suite";
import { eventually } from "@casebook/lab/eventually";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { errors } from "../src/errors.ts";
import { HistoryStore } from "../src/store/history-store.ts";
import { migrateChatStore } from "../src/store/migrate.ts";
import { type HistorySubject, historyBackends, newChat, newMessage } from "./history-fixture.ts";
import { startSystem } from "./system-fixture.ts";

contractSuite<HistorySubject>("chat batched send", historyBackends(), (it) => {
  it("CH-06 CH-03 40 concurrent sends to 8 groups go in fewer statements than sends; each group's seqs 1..5 once, in arrival order", async (s) => {
    const chats = await Promise.all(Array.from({ length: 8 }, () => newChat(s, "group", ["ana", "bruno"])));
    const before = s.history.sendBatchStats!;
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        s.history.append(
          newMessage(chats[i % 8]!, s.ids, { senderId: i % 2 ? "ana" : "bruno", body: `m${i}` }),
        ),
      ),
    );
    const after = s.history.sendBatchStats!;
    assert.equal(after.items - before.items, 40);
    assert.ok(
      after.batches - before.batches < 40,
      `batched: ${after.batches - before.batches} statements for 40 sends`,
    );
    for (const [k, chatId] of chats.entries()) {
      const mine = results.filter((_, i) => i % 8 === k);
      // Submitted in this order, so the batch numbers them in this order.
      assert.deepEqual(
        mine.map((r) => r.message.seq),
        [1n, 2n, 3n, 4n, 5n],
      );
      assert.ok(mine.every((r) => r.created && r.kind === "group"));
      const stored = await s.history.after(chatId, "ana", 0n, 10);
      assert.deepEqual(
        stored.map((m) => m.body),
        mine.map((r) => r.message.body),
      );
      assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 5n);
    }
    // The members came with the write: no second query for the delivery.
    assert.deepEqual([...(results[0]!.recipients ?? [])].sort(), ["ana", "bruno"]);
  });

  it("CH-09 the same client_msg_id twice in one batch and again later: one row, the counter moved once", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    const other = await newChat(s, "group", ["ana", "bruno"]);
    const first = newMessage(chatId, s.ids, { senderId: "ana" });
    // The first send of an idle moment goes alone; the three behind it form the next batch.
    const [, ...twice] = await Promise.all([
      s.history.append(newMessage(other, s.ids, { senderId: "ana" })),
      s.history.append(first),
      s.history.append({ ...newMessage(chatId, s.ids, { senderId: "ana" }), clientMsgId: first.clientMsgId }),
      s.history.append(newMessage(chatId, s.ids, { senderId: "bruno" })),
    ]);
    assert.deepEqual(
      twice.map((r) => r.created),
      [true, false, true],
    );
    assert.equal(twice[1]!.message.id, twice[0]!.message.id);
    assert.equal(twice[1]!.recipients, undefined, "a resend is not delivered again by the store's members");
    const later = await s.history.append({
      ...newMessage(chatId, s.ids, { senderId: "ana" }),
      clientMsgId: first.clientMsgId,
    });
    assert.equal(later.created, false);
    assert.equal(later.message.id, twice[0]!.message.id);
    assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 2n);
    assert.equal((await s.history.after(chatId, "ana", 0n, 10)).length, 2);
  });

  it("CH-05 a non-member's send in a batch is refused (CHAT_NOT_FOUND); its neighbours are stored and told so", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    // The first send of an idle moment goes alone; the three behind it share the next statement.
    const [first, before, stranger, after] = await Promise.allSettled([
      s.history.append(newMessage(chatId, s.ids, { senderId: "ana" })),
      s.history.append(newMessage(chatId, s.ids, { senderId: "bruno" })),
      s.history.append(newMessage(chatId, s.ids, { senderId: "mallory" })),
      s.history.append(newMessage(chatId, s.ids, { senderId: "ana" })),
    ]);
    assert.equal(stranger.status, "rejected");
    assert.ok(errors.is((stranger as PromiseRejectedResult).reason, "CHAT_NOT_FOUND"));
    const seqOf = (r: PromiseSettledResult<{ message: { seq?: bigint } }>) => {
      assert.equal(r.status, "fulfilled", "a neighbour of the refused send is not failed with it");
      return (r as PromiseFulfilledResult<{ message: { seq?: bigint } }>).value.message.seq;
    };
    assert.deepEqual([seqOf(first), seqOf(before), seqOf(after)], [1n, 2n, 3n]);
  });
});

test("CH-09 CH-03 a batch that loses a race to a concurrent resend is rolled back whole and sent one by one: no seq skipped", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const opened = await openPostgresTestSchema(url, {
    system: "chat",
    prefix: "chat_batch",
    prepare: migrateChatStore,
  });
  t.after(() => opened.drop());
  const history = new HistoryStore(opened.db);
  const ids = new SnowflakeGenerator({ clock: systemClock, workerId: 1_001 });
  const chatId = ids.next();
  await history.createConversation({
    id: chatId,
    kind: "group",
    title: "g",
    createdBy: "ana",
    members: ["ana", "bruno"],
    nowMs: Date.now(),
  });
  const raced = randomUUID();
  let batch: Promise<unknown> | undefined;
  // Another send service's transaction: it holds the conversation row and stores `raced` first.
  await opened.db.transaction(async (tx) => {
    const { rows: me } = await tx.query<{ pid: number }>("SELECT pg_backend_pid() AS pid");
    const { rows } = await tx.query<{ last_seq: bigint }>(
      "UPDATE conversations SET last_seq = last_seq + 1 WHERE id = $1 RETURNING last_seq",
      [String(chatId)],
    );
    await tx.query(
      `INSERT INTO messages (chat_id, id, seq, client_msg_id, sender_id, sender_device, body, created_at)
       VALUES ($1, $2, $3, $4, 'ana', 'phone', 'first', now())`,
      [String(chatId), String(ids.next()), String(rows[0]!.last_seq), raced],
    );
    // The batch (the resend of `raced` and a new message) reads before this commits, then waits on the row.
    batch = Promise.all([
      history.append({ ...newMessage(chatId, ids, { senderId: "ana" }), clientMsgId: raced }),
      history.append(newMessage(chatId, ids, { senderId: "bruno", body: "second" })),
    ]);
    // Commit only once the batch's statement waits on this transaction (a sleep here let a slow
    // batch start after the commit: no race, and the test passed without the guard).
    await eventually(
      async () => {
        const { rows: waiting } = await opened.db.query<{ n: number }>(
          "SELECT count(*)::int4 AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))",
          [me[0]!.pid],
        );
        return waiting[0]!.n > 0;
      },
      { what: "the batch to wait on the conversation row", timeoutMs: 10_000, intervalMs: 10 },
    );
  });
  const [resend, second] = (await batch) as [
    { created: boolean; message: { body: string; seq?: bigint } },
    { created: boolean; message: { seq?: bigint } },
  ];
  assert.equal(resend.created, false);
  assert.equal(resend.message.body, "first");
  assert.equal(second.created, true);
  assert.equal(second.message.seq, 2n, "the lost batch's counter move was rolled back");
  // Without the guard the lost batch would have kept its counter move: the second send's seq 3.
  assert.equal(history.sendBatchStats!.items, 2);
  const stored = await history.after(chatId, "ana", 0n, 10);
  assert.deepEqual(
    stored.map((m) => m.seq),
    [1n, 2n],
  );
});

test("CH-03 the send service's /metrics counts the batched statements and the sends in them", async (t) => {
  const sys = await startSystem();
  t.after(() => sys.close());
  const ana = await sys.token("ana");
  const { json: chat } = await sys.api<{ id: string }>(ana, "POST", "/v1/conversations", {
    kind: "group",
    title: "g",
    members: ["bruno"],
  });
  const sent = await Promise.all(
    Array.from({ length: 6 }, (_, i) =>
      sys.api(ana, "POST", `/v1/conversations/${chat.id}/messages`, {
        clientMsgId: randomUUID(),
        body: `m${i}`,
      }),
    ),
  );
  assert.deepEqual(
    sent.map((r) => r.status),
    [201, 201, 201, 201, 201, 201],
  );
  const text = await (await fetch(`${sys.running.url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, "m").exec(text)?.[1]);
  assert.equal(value("chat_send_batch_size_sum"), 6, "every send went through a batched statement");
  const statements = value("chat_send_batch_size_count");
  assert.ok(statements >= 1 && statements <= 6, `${statements} statements for 6 sends`);
});
