/**
 * The outbox pruner on both engines: once started it deletes the rows published before
 * `keepMs` in batches until none is left, and leaves younger published rows and unpublished
 * ones in place.
 */
import assert from "node:assert/strict";
import { ManualClock } from "@casebook/kit/clock";
import { contractSuite } from "@casebook/lab/contract-suite";
import { eventually } from "@casebook/lab/eventually";
import { sqlBackends } from "@casebook/lab/sql-backends";
import { UnorderedOutbox } from "../../src/sql/outbox.ts";
import { unorderedOutboxDdl } from "../../src/sql/outbox-ddl.ts";
import { OutboxPruner } from "../../src/sql/outbox-pruner.ts";
import { OutboxRelay } from "../../src/sql/outbox-relay.ts";
import type { Database } from "../../src/sql/sql.ts";

const T0 = Date.UTC(2026, 0, 1);
const KEEP_MS = 60_000;

const backends = sqlBackends({
  system: "outbox",
  prefix: "outbox_pruner",
  prepare: async () => {},
  subject: (db) => db,
});

async function rows(db: Database, table: string): Promise<string[]> {
  const { rows } = await db.query<{ event_id: string }>(`SELECT event_id FROM ${table} ORDER BY id`);
  return rows.map((r) => r.event_id);
}

contractSuite("outbox pruner", backends, (it) => {
  it("deletes published rows older than keepMs, in batches, and nothing else", async (db) => {
    const table = `ob_prune_${Math.floor(Math.random() * 1e9)}`;
    await db.exec(unorderedOutboxDdl({ table }));
    const outbox = new UnorderedOutbox({ table });
    const clock = new ManualClock(T0);
    const relay = new OutboxRelay(db, {
      outbox,
      clock,
      publisher: { publish: async () => {} },
      onError: () => {},
    });
    for (let i = 0; i < 5; i++)
      await db.transaction((tx) => outbox.enqueue(tx, { eventId: `old-${i}` }, { nowMs: T0 }));
    while ((await relay.runOnce()).claimed > 0) {}
    clock.advance(KEEP_MS + 1);
    await db.transaction((tx) => outbox.enqueue(tx, { eventId: "young" }, { nowMs: clock.nowMs() }));
    while ((await relay.runOnce()).claimed > 0) {}
    await db.transaction((tx) => outbox.enqueue(tx, { eventId: "unpublished" }, { nowMs: clock.nowMs() }));
    const pruner = new OutboxPruner(db, {
      outbox,
      keepMs: KEEP_MS,
      clock,
      batch: 2,
      everyMs: 60_000,
      onError: () => {},
    });
    pruner.start();
    try {
      // Batches of 2 over 5 old rows: full, full, then 1 — the loop goes on at once after a full batch.
      await eventually(async () => (await rows(db, table)).length === 2, { timeoutMs: 10_000 });
      assert.deepEqual(await rows(db, table), ["young", "unpublished"]);
    } finally {
      await pruner.stop();
    }
  });
});
