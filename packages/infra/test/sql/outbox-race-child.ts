/**
 * A relay PROCESS for outbox-race.test.ts, on the real PostgreSQL: its own pool on the test
 * schema, one ordered and one unordered relay in the background, each publishing into
 * `race_published` (a serial `n` records the order publications happened in, across
 * processes). It says "ready", starts on "start", and on "stop" stops both relays (in-flight
 * work is given back), reports the errors its relays survived, and exits.
 *
 * argv: <database url> <schema> <owner>
 */
import { openDatabase } from "../../src/sql/open-database.ts";
import { OrderedOutbox, type OutboxEventBase, UnorderedOutbox } from "../../src/sql/outbox.ts";
import { OutboxRelay } from "../../src/sql/outbox-relay.ts";

const [url, schema, ownerArg] = process.argv.slice(2);
if (!url || !schema || !ownerArg) throw new Error("usage: <url> <schema> <owner>");
const owner: string = ownerArg;

const db = await openDatabase({ system: "outbox-race", url, schema, pool: { maxConnections: 3 } });
const errors: string[] = [];
const publisher = (discipline: string) => ({
  async publish(event: OutboxEventBase & { orderingKey?: string; seq?: bigint }) {
    await db.query(
      "INSERT INTO race_published (discipline, event_id, ordering_key, seq, relay) VALUES ($1, $2, $3, $4, $5)",
      [discipline, event.eventId, event.orderingKey ?? null, event.seq ?? null, owner],
    );
  },
});
const onError = (err: unknown) => errors.push(err instanceof Error ? err.message : String(err));
const relays = [
  new OutboxRelay(db, {
    outbox: new OrderedOutbox({ streams: "race_streams", events: "race_events" }),
    publisher: publisher("ordered"),
    owner: `${owner}-ordered`,
    maxInFlightKeys: 3,
    maxBatch: 4,
    pollIntervalMs: 5,
    onError,
  }),
  new OutboxRelay(db, {
    outbox: new UnorderedOutbox({ table: "race_rows" }),
    publisher: publisher("unordered"),
    owner: `${owner}-unordered`,
    maxBatch: 5,
    pollIntervalMs: 5,
    onError,
  }),
];

const send = (message: unknown) =>
  new Promise<void>((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );

process.on("message", (message: "start" | "stop") => {
  if (message === "start") {
    for (const relay of relays) relay.start();
    return;
  }
  void (async () => {
    await Promise.all(relays.map((r) => r.stop()));
    await send({ kind: "stopped", errors });
    await db.close();
    process.disconnect();
  })().catch((err) => {
    process.stderr.write(`${owner}: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
});
await send({ kind: "ready" });
