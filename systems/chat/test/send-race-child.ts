/**
 * A sender PROCESS for send-race.test.ts, on the real PostgreSQL: its own pool on the test
 * schema, its own Snowflake node id taken from the database, its own stamper. Prints
 * "ready", waits for "go", then sends `n` new messages to the group and to the channel,
 * and resends each of the shared client_msg_ids to the group (every process the same
 * ids), all concurrently; prints "done <json>" with the (id, seq, created) of each send.
 *
 * argv: <database url> <schema> <group id> <channel id> <n> <shared ids, comma-separated>
 */
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { SnowflakeGenerator } from "@casebook/kit/snowflake";
import { CommitOffsets } from "../src/domain/commit-offsets.ts";
import { HistoryStore } from "../src/store/history-store.ts";

const [url, schema, groupText, channelText, nText, sharedText] = process.argv.slice(2);
if (!url || !schema || !groupText || !channelText || !nText || sharedText === undefined) {
  throw new Error("usage: <url> <schema> <group> <channel> <n> <shared ids>");
}
const db = await openDatabase({ system: "chat", url, schema, pool: { maxConnections: 4 } });
const history = new HistoryStore(db);
const ids = new SnowflakeGenerator({ clock: systemClock, workerId: await history.takeNodeId() });
const offsets = new CommitOffsets(history, { maxBatch: 50, maxPending: 1_000 });
const group = BigInt(groupText);
const channel = BigInt(channelText);
const shared = sharedText === "" ? [] : sharedText.split(",");

const lines = createInterface({ input: process.stdin });
process.stdout.write("ready\n");
for await (const line of lines) if (line === "go") break;

const send = (chatId: bigint, clientMsgId: string) =>
  history.append({
    chatId,
    id: ids.next(),
    clientMsgId,
    senderId: "ana",
    senderDevice: `pid-${process.pid}`,
    body: clientMsgId,
    nowMs: systemClock.nowMs(),
  });
const n = Number(nText);
const results = await Promise.all([
  ...Array.from({ length: n }, async () => {
    const { message, created } = await send(group, randomUUID());
    return {
      chat: "group",
      id: String(message.id),
      seq: String(message.seq),
      created,
      clientMsgId: message.clientMsgId,
    };
  }),
  ...shared.map(async (clientMsgId) => {
    const { message, created } = await send(group, clientMsgId);
    return { chat: "group", id: String(message.id), seq: String(message.seq), created, clientMsgId };
  }),
  ...Array.from({ length: n }, async () => {
    const { message, created } = await send(channel, randomUUID());
    const seq = await offsets.offsetOf(channel, message.id);
    return {
      chat: "channel",
      id: String(message.id),
      seq: String(seq),
      created,
      clientMsgId: message.clientMsgId,
    };
  }),
]);
await db.close();
process.stdout.write(`done ${JSON.stringify(results)}\n`);
