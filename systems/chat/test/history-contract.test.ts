/**
 * The durable history's contract (CH-03/05/06/09/19/26), one suite on PGlite and on the
 * real PostgreSQL: seqs from the per-conversation counter taken in the send transaction,
 * the conditional insert by client_msg_id, "everything after X" in order, cursor pages
 * newest first, and channel commit offsets.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { type Clock, systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { contractSuite } from "@casebook/lab/contract-suite";
import { CommitOffsets } from "../src/domain/commit-offsets.ts";
import { MAX_MESSAGE_BYTES } from "../src/domain/conversation.ts";
import { errors } from "../src/errors.ts";
import { type HistorySubject, historyBackends, newChat, newMessage } from "./history-fixture.ts";

/** Two Snowflake nodes whose clocks disagree by `skewMs`: the fast one stamps the future. */
function skewedNodes(skewMs: number) {
  const fastClock: Clock = {
    nowMs: () => systemClock.nowMs() + skewMs,
    monotonicMs: () => systemClock.monotonicMs(),
  };
  return {
    fast: new SnowflakeGenerator({ clock: fastClock, workerId: 11 }),
    slow: new SnowflakeGenerator({ clock: systemClock, workerId: 12 }),
  };
}

contractSuite<HistorySubject>("chat history", historyBackends(), (it) => {
  it("CH-06 24 concurrent sends to one group get seqs 1..24, each once, committed in order", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno", "carla"]);
    const results = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        s.history.append(newMessage(chatId, s.ids, { senderId: i % 2 ? "ana" : "bruno", body: `m${i}` })),
      ),
    );
    const seqs = results.map((r) => Number(r.message.seq)).sort((a, b) => a - b);
    assert.deepEqual(
      seqs,
      Array.from({ length: 24 }, (_, i) => i + 1),
    );
    const conversation = await s.history.conversation(chatId, "carla");
    assert.equal(conversation.lastSeq, 24n);
  });

  it("CH-09 a resend with the same client_msg_id returns the first message and writes nothing", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "bruno"]);
    const first = newMessage(chatId, s.ids, { senderId: "ana", body: "once" });
    const a = await s.history.append(first);
    const b = await s.history.append({ ...first, id: s.ids.next(), body: "changed on resend" });
    assert.equal(a.created, true);
    assert.equal(b.created, false);
    assert.deepEqual(b.message, a.message);
    assert.equal((await s.history.after(chatId, "bruno", 0n, 10)).length, 1);
  });

  it("CH-09 12 concurrent resends of one client_msg_id store one message; the counter moves once", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    const clientMsgId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        s.history.append(newMessage(chatId, s.ids, { senderId: "ana", clientMsgId })),
      ),
    );
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(new Set(results.map((r) => r.message.id)).size, 1);
    assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 1n);
    const next = await s.history.append(newMessage(chatId, s.ids, { senderId: "bruno" }));
    assert.equal(next.message.seq, 2n, "no hole left by the losers' rolled-back increments");
  });

  it("CH-05 one write, a pointer per reader: each reader resumes after its own last seq, in order", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno", "carla"]);
    for (let i = 1; i <= 9; i++)
      await s.history.append(newMessage(chatId, s.ids, { senderId: "ana", body: `m${i}` }));
    const bruno = await s.history.after(chatId, "bruno", 3n, 100);
    const carla = await s.history.after(chatId, "carla", 7n, 100);
    assert.deepEqual(
      bruno.map((m) => m.body),
      ["m4", "m5", "m6", "m7", "m8", "m9"],
    );
    assert.deepEqual(
      carla.map((m) => m.body),
      ["m8", "m9"],
    );
    const page = await s.history.after(chatId, "carla", 0n, 4);
    assert.deepEqual(
      page.map((m) => m.seq),
      [1n, 2n, 3n, 4n],
      "bounded pages",
    );
  });

  it("CH-05 a user who is not a member reads nothing and sends nothing (CHAT_NOT_FOUND)", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    await assert.rejects(s.history.after(chatId, "eve", 0n, 10), (e) => errors.is(e, "CHAT_NOT_FOUND"));
    await assert.rejects(s.history.append(newMessage(chatId, s.ids, { senderId: "eve" })), (e) =>
      errors.is(e, "CHAT_NOT_FOUND"),
    );
    assert.equal((await s.history.conversation(chatId, "ana")).lastSeq, 0n);
  });

  it("CH-26 a month offline: cursor pages over seq, newest first, cover everything once", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "dora"]);
    for (let i = 1; i <= 23; i++)
      await s.history.append(newMessage(chatId, s.ids, { senderId: "ana", body: `m${i}` }));
    const seen: bigint[] = [];
    let cursor: bigint | undefined;
    for (let pages = 0; pages < 10; pages++) {
      const page = await s.history.before(chatId, "dora", cursor, 5);
      if (page.length === 0) break;
      for (let i = 1; i < page.length; i++) assert.ok(page[i - 1]!.seq! > page[i]!.seq!, "newest first");
      seen.push(...page.map((m) => m.seq!));
      cursor = page.at(-1)!.seq;
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 23 }, (_, i) => BigInt(23 - i)),
    );
  });

  it("CH-19 a 128 KB message is one row, read back whole by the (chat, seq) range", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "eli"]);
    const body = "é".repeat(MAX_MESSAGE_BYTES / 2);
    await s.history.append(newMessage(chatId, s.ids, { senderId: "ana", body }));
    const [read] = await s.history.after(chatId, "eli", 0n, 1);
    assert.equal(read?.body, body);
    if (s.db.engine === "postgres") {
      const { rows } = await s.db.query<{ "QUERY PLAN": string }>(
        "EXPLAIN SELECT * FROM messages WHERE chat_id = 1 AND seq > 5 ORDER BY seq LIMIT 100",
      );
      assert.match(rows.map((r) => r["QUERY PLAN"]).join("\n"), /messages_by_seq|messages_pkey/);
    }
  });

  it("CH-24 a direct conversation is one per pair, whoever creates it", async (s) => {
    const a = await newChat(s, "direct", ["fabi", "gil"]);
    const b = await newChat(s, "direct", ["gil", "fabi"]);
    assert.equal(a, b);
  });

  it("CH-07 a channel send takes no counter: its seq comes from the commit-offset stamp", async (s) => {
    const chatId = await newChat(s, "channel", ["ana", "bruno"]);
    const offsets = new CommitOffsets(s.history, { maxBatch: 100, maxPending: 1_000 });
    const sent = await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
    assert.equal(sent.message.seq, undefined, "unnumbered until stamped");
    assert.deepEqual(
      await s.history.after(chatId, "bruno", 0n, 10),
      [],
      "readers never see an unnumbered row",
    );
    assert.equal(await offsets.offsetOf(chatId, sent.message.id), 1n);
    const resend = await s.history.append({
      ...newMessage(chatId, s.ids, { senderId: "ana" }),
      clientMsgId: sent.message.clientMsgId,
    });
    assert.equal(resend.created, false);
    assert.equal(resend.message.seq, 1n);
  });

  it("CH-08 30 concurrent channel sends and stamps: offsets 1..30, each once, matching the rows", async (s) => {
    const chatId = await newChat(s, "channel", ["ana", "bruno"]);
    const offsets = new CommitOffsets(s.history, { maxBatch: 7, maxPending: 1_000 });
    const seqs = await Promise.all(
      Array.from({ length: 30 }, async () => {
        const { message } = await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
        return offsets.offsetOf(chatId, message.id);
      }),
    );
    assert.deepEqual(
      seqs.map(Number).sort((a, b) => a - b),
      Array.from({ length: 30 }, (_, i) => i + 1),
    );
    const read = await s.history.after(chatId, "bruno", 0n, 100);
    assert.deepEqual(
      read.map((m) => m.seq),
      Array.from({ length: 30 }, (_, i) => BigInt(i + 1)),
    );
  });

  it("CH-08 skewed nodes: a later message gets a smaller Snowflake; 'after id' skips it, 'after offset' does not", async (s) => {
    const chatId = await newChat(s, "channel", ["ana", "bruno", "carla"]);
    const offsets = new CommitOffsets(s.history, { maxBatch: 100, maxPending: 1_000 });
    const nodes = skewedNodes(5_000);
    const first = await s.history.append(newMessage(chatId, nodes.fast, { senderId: "ana", body: "first" }));
    await offsets.offsetOf(chatId, first.message.id);
    const [seen] = await s.history.after(chatId, "carla", 0n, 10);
    assert.equal(seen?.body, "first");
    const second = await s.history.append(
      newMessage(chatId, nodes.slow, { senderId: "bruno", body: "second" }),
    );
    await offsets.offsetOf(chatId, second.message.id);
    assert.ok(second.message.id < first.message.id, "sent later, smaller id: k-ordered, not monotonic");
    const byId = await s.db.query("SELECT body FROM messages WHERE chat_id = $1 AND id > $2", [
      String(chatId),
      String(seen.id),
    ]);
    assert.equal(byId.rowCount, 0, "resume 'after id X' loses the second message");
    const resumed = await s.history.after(chatId, "carla", seen.seq!, 10);
    assert.deepEqual(
      resumed.map((m) => m.body),
      ["second"],
      "resume after the commit offset gets it",
    );
  });

  it("CH-08 a reader polling after its offset while 40 sends race on two skewed nodes misses nothing", async (s) => {
    const chatId = await newChat(s, "channel", ["ana", "bruno", "carla"]);
    const offsets = new CommitOffsets(s.history, { maxBatch: 16, maxPending: 1_000 });
    const nodes = skewedNodes(10_000);
    const total = 40;
    let sending = true;
    // 8 senders, 5 messages each in series, alternating nodes: stamps happen over time,
    // so a slow-node message stamped after a fast-node one carries a smaller id.
    const sends = Promise.all(
      Array.from({ length: 8 }, async (_, sender) => {
        for (let k = 0; k < total / 8; k++) {
          const node = (sender + k) % 2 === 0 ? nodes.fast : nodes.slow;
          const body = `m${sender}-${k}`;
          const { message } = await s.history.append(newMessage(chatId, node, { senderId: "ana", body }));
          await offsets.offsetOf(chatId, message.id);
        }
      }),
    ).finally(() => {
      sending = false;
    });
    const received: { id: bigint; seq: bigint }[] = [];
    let lastSeq = 0n;
    for (let polls = 0; polls < 10_000 && (sending || received.length < total); polls++) {
      const page = await s.history.after(chatId, "carla", lastSeq, 7);
      for (const m of page) received.push({ id: m.id, seq: m.seq! });
      if (page.length > 0) lastSeq = page.at(-1)!.seq!;
      if (page.length === 0 && !sending) break;
    }
    await sends;
    assert.equal(received.length, total, "every message read exactly once");
    assert.deepEqual(
      received.map((r) => r.seq),
      Array.from({ length: total }, (_, i) => BigInt(i + 1)),
    );
    assert.equal(new Set(received.map((r) => r.id)).size, total);
    const inversions = received.filter((r, i) => i > 0 && r.id < received[i - 1]!.id).length;
    assert.ok(
      inversions > 0,
      "the skew did put ids out of offset order (the test would prove nothing otherwise)",
    );
  });

  it("CH-11 a receipt moves the device's pointer forward only and stamps the newly covered messages", async (s) => {
    const chatId = await newChat(s, "direct", ["ana", "bruno11"]);
    for (let i = 1; i <= 5; i++)
      await s.history.append(newMessage(chatId, s.ids, { senderId: i === 3 ? "bruno11" : "ana" }));
    const r = (kind: "delivered" | "read", seq: bigint, deviceId = "phone") =>
      s.history.receipt({ chatId, userId: "bruno11", deviceId, kind, seq, nowMs: Date.now() });
    assert.deepEqual(await r("delivered", 4n), {
      kind: "delivered",
      fromSeq: 0n,
      toSeq: 4n,
      senders: ["ana"],
    });
    assert.equal(await r("delivered", 2n), undefined, "a late receipt moves nothing back");
    const read = await r("read", 2n);
    assert.equal(read?.toSeq, 2n);
    assert.deepEqual(
      (await s.history.pointers(chatId, "bruno11")).map((p) => [p.deliveredSeq, p.readSeq]),
      [[4n, 2n]],
      "reading up to 2 leaves the delivered pointer at 4: neither pointer ever moves back",
    );
    const messages = await s.history.after(chatId, "ana", 0n, 10);
    assert.deepEqual(
      messages.map((m) => [m.deliveredAtMs !== undefined, m.readAtMs !== undefined]),
      [
        [true, true],
        [true, true],
        [false, false],
        [true, false],
        [false, false],
      ],
      "bruno's own message (seq 3) gets no status from bruno; 5 is not delivered yet",
    );
    await assert.rejects(r("read", 6n), (e) => errors.is(e, "CHAT_RECEIPT_INVALID"));
  });

  it("CH-25 each device keeps its own pointer", async (s) => {
    const chatId = await newChat(s, "group", ["ana", "bruno"]);
    for (let i = 1; i <= 4; i++) await s.history.append(newMessage(chatId, s.ids, { senderId: "ana" }));
    await s.history.receipt({
      chatId,
      userId: "bruno",
      deviceId: "phone",
      kind: "read",
      seq: 4n,
      nowMs: Date.now(),
    });
    await s.history.receipt({
      chatId,
      userId: "bruno",
      deviceId: "laptop",
      kind: "delivered",
      seq: 1n,
      nowMs: Date.now(),
    });
    assert.deepEqual(await s.history.pointers(chatId, "bruno"), [
      { deviceId: "laptop", deliveredSeq: 1n, readSeq: 0n },
      { deviceId: "phone", deliveredSeq: 4n, readSeq: 4n },
    ]);
  });
});
