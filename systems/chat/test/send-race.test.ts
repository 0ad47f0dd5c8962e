/**
 * Sends raced by 3 PROCESSES on the real PostgreSQL (ARCHITECTURE: every "never twice" is
 * raced by several processes on one engine). Each process sends 25 new messages to one
 * group and 25 to one channel, and resends the same 10 client_msg_ids to the group:
 *
 * - CH-06: the group's seqs are exactly 1..85 (75 new + 10 shared), each once;
 * - CH-09: each shared client_msg_id is stored once, and all 3 processes got its first result;
 * - CH-08: the channel's commit offsets are exactly 1..75 across the three stampers.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { HistoryStore } from "../src/store/history-store.ts";
import { migrateChatStore } from "../src/store/migrate.ts";

const CHILD = fileURLToPath(new URL("./send-race-child.ts", import.meta.url));
const CHILD_WAIT_MS = 120_000;
const PROCESSES = 3;
const NEW_PER_PROCESS = 25;
const SHARED = 10;

interface Sent {
  chat: "group" | "channel";
  id: string;
  seq: string;
  created: boolean;
  clientMsgId: string;
}

test("CH-06 CH-09 CH-08 3 sender processes on one group and one channel: seqs and offsets each once, resends stored once", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const opened = await openPostgresTestSchema(url, {
    system: "chat",
    prefix: "chat_race",
    prepare: migrateChatStore,
  });
  const children: SpawnedChild[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await opened.drop();
  });
  const history = new HistoryStore(opened.db);
  const ids = new SnowflakeGenerator({ clock: systemClock, workerId: 1_000 });
  const create = async (kind: "group" | "channel") =>
    (
      await history.createConversation({
        id: ids.next(),
        kind,
        title: kind,
        createdBy: "ana",
        members: ["ana", "bruno"],
        nowMs: Date.now(),
      })
    ).conversation.id;
  const group = await create("group");
  const channel = await create("channel");
  const shared = Array.from({ length: SHARED }, () => randomUUID());
  for (let i = 0; i < PROCESSES; i++) {
    children.push(
      await spawnChild(CHILD, {
        args: [url, opened.schema, String(group), String(channel), String(NEW_PER_PROCESS), shared.join(",")],
        ready: "ready",
        readyTimeoutMs: CHILD_WAIT_MS,
        lineTimeoutMs: CHILD_WAIT_MS,
      }),
    );
  }
  for (const child of children) child.send("go");
  const reports = await Promise.all(children.map((child) => child.nextLine()));
  const sent: Sent[] = reports.flatMap((line) => {
    assert.match(line, /^done /);
    return JSON.parse(line.slice(5)) as Sent[];
  });

  const groupSeqs = new Map<string, string>();
  for (const s of sent.filter((s) => s.chat === "group")) {
    const known = groupSeqs.get(s.clientMsgId);
    if (known !== undefined) assert.equal(s.seq, known, "every resend returns the first result");
    groupSeqs.set(s.clientMsgId, s.seq);
  }
  const total = PROCESSES * NEW_PER_PROCESS + SHARED;
  assert.deepEqual(
    [...groupSeqs.values()].map(Number).sort((a, b) => a - b),
    Array.from({ length: total }, (_, i) => i + 1),
  );
  for (const id of shared) {
    const firsts = sent.filter((s) => s.clientMsgId === id && s.created);
    assert.equal(firsts.length, 1, `client_msg_id ${id} created once`);
  }
  const stored = await opened.db.query<{ n: bigint }>(
    "SELECT count(*) AS n FROM messages WHERE chat_id = $1",
    [String(group)],
  );
  assert.equal(stored.rows[0]!.n, BigInt(total));

  const channelSeqs = sent.filter((s) => s.chat === "channel").map((s) => Number(s.seq));
  assert.deepEqual(
    channelSeqs.sort((a, b) => a - b),
    Array.from({ length: PROCESSES * NEW_PER_PROCESS }, (_, i) => i + 1),
  );
  assert.equal(
    new Set(sent.map((s) => s.id)).size,
    sent.length - SHARED * (PROCESSES - 1),
    "ids unique across nodes",
  );
});
