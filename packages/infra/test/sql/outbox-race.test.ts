/**
 * The outbox relay raced by PROCESSES on the real PostgreSQL (ARCHITECTURE: every "never
 * twice" is tested with several processes on one engine). Four relay processes (each an
 * ordered and an unordered relay on its own pool) publish while four writer pools commit
 * events: ordered ones for eight keys, each transaction bumping its key's business version
 * (per key, commit order = version order), and unordered rows. Without crashes or lease
 * expiry every event is published exactly once, per key in commit order, and the work is
 * shared between processes.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { seededRandom } from "@casebook/kit/random";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";
import { openDatabase } from "../../src/sql/open-database.ts";
import { OrderedOutbox, UnorderedOutbox } from "../../src/sql/outbox.ts";
import { orderedOutboxDdl, unorderedOutboxDdl } from "../../src/sql/outbox-ddl.ts";
import type { Database } from "../../src/sql/sql.ts";

const CHILD = fileURLToPath(new URL("./outbox-race-child.ts", import.meta.url));
/** Bound on any wait: generous for a loaded 2-core machine, still finite. */
const WAIT_MS = 120_000;
const RELAYS = 4;
const WRITERS = 4;
const KEYS = 8;
const EVENTS_PER_WRITER = 40;

type Message = { kind: "ready" } | { kind: "stopped"; errors: string[] };

/** The child's next message of `kind`, within WAIT_MS; rejects if the child exits first. */
function nextMessage<K extends Message["kind"]>(
  child: SpawnedChild,
  kind: K,
): Promise<Extract<Message, { kind: K }>> {
  return child.nextMessage((message) => (message as Message).kind === kind, WAIT_MS);
}

test("four relay processes, both disciplines: each event published exactly once, per key in commit order, the work shared", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema, drop } = await openPostgresTestSchema(url, {
    system: "outbox-race",
    prefix: "outbox_race",
    prepare: async (d) => {
      await d.exec(orderedOutboxDdl({ streams: "race_streams", events: "race_events" }));
      await d.exec(unorderedOutboxDdl({ table: "race_rows" }));
      await d.exec(`CREATE TABLE race_published (n int8 GENERATED ALWAYS AS IDENTITY, discipline text NOT NULL,
        event_id text NOT NULL, ordering_key text, seq int8, relay text NOT NULL);
        CREATE TABLE race_keys (id text PRIMARY KEY, version int8 NOT NULL DEFAULT 0)`);
    },
  });
  const children: SpawnedChild[] = [];
  const pools: Database[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await Promise.all(pools.map((p) => p.close()));
    await drop();
  });
  const keys = Array.from({ length: KEYS }, (_, i) => `key_${i}`);
  for (const id of keys) await db.query("INSERT INTO race_keys (id) VALUES ($1)", [id]);
  const ready = { message: (message: unknown) => (message as Message).kind === "ready" };
  await Promise.all(
    Array.from({ length: RELAYS }, async (_, i) =>
      children.push(
        await spawnChild(CHILD, { args: [url, schema, `p${i}`], ipc: true, ready, readyTimeoutMs: WAIT_MS }),
      ),
    ),
  );
  await Promise.all(children.map((child) => child.sendMessage("start")));

  const ordered = new OrderedOutbox({ streams: "race_streams", events: "race_events" });
  const unordered = new UnorderedOutbox({ table: "race_rows" });
  for (let i = 0; i < WRITERS; i++)
    pools.push(await openDatabase({ system: "outbox-race", url, schema, pool: { maxConnections: 2 } }));
  await Promise.all(
    pools.map(async (pool, w) => {
      const rng = seededRandom(`outbox-race-writer-${w}`);
      for (let i = 0; i < EVENTS_PER_WRITER; i++) {
        const key = keys[Math.floor(rng.next() * KEYS)]!;
        await pool.transaction(async (tx) => {
          const { rows } = await tx.query<{ version: bigint }>(
            "UPDATE race_keys SET version = version + 1 WHERE id = $1 RETURNING version",
            [key],
          );
          await ordered.enqueue(tx, {
            orderingKey: key,
            type: "key.changed",
            payload: {},
            eventId: `${key}@${rows[0]!.version}`,
          });
          await unordered.enqueue(tx, { eventId: `row-${w}-${i}` });
        });
      }
    }),
  );
  const total = WRITERS * EVENTS_PER_WRITER;
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const { rows } = await db.query<{ n: bigint }>(
      "SELECT count(DISTINCT event_id) AS n FROM race_published",
    );
    if (rows[0]!.n === BigInt(2 * total)) break;
    if (Date.now() > deadline) assert.fail(`published ${rows[0]!.n} of ${2 * total} events`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const stopped = children.map((child) => nextMessage(child, "stopped"));
  await Promise.all(children.map((child) => child.sendMessage("stop")));
  const reports = await Promise.all(stopped);
  assert.deepEqual(
    reports.flatMap((r) => r.errors),
    [],
    "no relay lost a claim or failed",
  );

  const { rows: counts } = await db.query<{ discipline: string; n: bigint; ids: bigint; relays: bigint }>(
    `SELECT discipline, count(*) AS n, count(DISTINCT event_id) AS ids, count(DISTINCT relay) AS relays
       FROM race_published GROUP BY discipline ORDER BY discipline`,
  );
  for (const c of counts) {
    assert.equal(c.n, BigInt(total), `${c.discipline}: no crash, no lease expiry: each event exactly once`);
    assert.equal(c.ids, BigInt(total), `${c.discipline}: none missing`);
    assert.ok(c.relays >= 2n, `${c.discipline}: the work was shared between processes (${c.relays})`);
  }
  for (const key of keys) {
    const { rows } = await db.query<{ event_id: string }>(
      "SELECT event_id FROM race_published WHERE discipline = 'ordered' AND ordering_key = $1 ORDER BY n",
      [key],
    );
    const expected = rows.map((_, i) => `${key}@${i + 1}`);
    assert.deepEqual(
      rows.map((r) => r.event_id),
      expected,
      `${key}: published in commit order`,
    );
    const state = await ordered.state(db, key);
    assert.equal(state?.publishedSeq, state?.lastSeq);
  }
});
