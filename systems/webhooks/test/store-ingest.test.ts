/**
 * Ingest on both engines: a stable event id per event, idempotency keys per tenant
 * (same key → same event; different content → a typed conflict), payload bounds.
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { enqueue, getEvent, ingestEvent } from "../src/store/event-repository.ts";
import { storeBackends } from "./store-backends.ts";
import { ingest, newWorld, seedTenant, storeError } from "./store-fixture.ts";

contractSuite("webhook event ingest", storeBackends("wh_ingest"), (it) => {
  it("an event gets a stable msg_ id and one outbox row", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const first = await ingest(w, t.id, { payload: { invoiceId: "in_1", amount: 10n } });
    assert.match(first.eventId, /^msg_[0-9a-f]{32}$/);
    assert.equal(first.created, true);
    const stored = await getEvent(db, t.id, first.eventId);
    assert.deepEqual(stored?.payload, { invoiceId: "in_1", amount: "10" }, "bigints become decimal strings");
    assert.equal(stored?.payloadExpiresAt.getTime(), w.clock.nowMs() + 86_400_000);
    const outbox = await db.query("SELECT 1 FROM outbox WHERE event_id = $1 AND published_at IS NULL", [
      first.eventId,
    ]);
    assert.equal(outbox.rowCount, 1);
  });

  it("the same idempotency key returns the same event, also with keys reordered", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const a = await ingest(w, t.id, { idempotencyKey: "k1", payload: { a: 1, b: { c: [1, 2] } } });
    w.clock.advance(5_000);
    const b = await ingest(w, t.id, { idempotencyKey: "k1", payload: { b: { c: [1, 2] }, a: 1 } });
    assert.equal(b.eventId, a.eventId);
    assert.equal(b.created, false);
    assert.equal(b.createdAt.getTime(), a.createdAt.getTime());
    const rows = await db.query("SELECT 1 FROM outbox WHERE tenant_id = $1", [t.id]);
    assert.equal(rows.rowCount, 1, "no second outbox row");
    const other = await seedTenant(w);
    const c = await ingest(w, other.id, { idempotencyKey: "k1", payload: { a: 1, b: { c: [1, 2] } } });
    assert.notEqual(c.eventId, a.eventId, "keys are per tenant");
  });

  it("the same key with another payload or type is a typed conflict, and leaves the caller's transaction usable", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    await ingest(w, t.id, { idempotencyKey: "k", payload: { a: 1 } });
    const after = await db.transaction(async (tx) => {
      await assert.rejects(
        enqueue(tx, t.id, { type: "invoice.paid", idempotencyKey: "k", payload: { a: 2 } }, w.ctx()),
        storeError("WEBHOOK_IDEMPOTENCY_CONFLICT"),
      );
      // ON CONFLICT DO NOTHING raised no SQL error: the producer's transaction goes on.
      return enqueue(tx, t.id, { type: "invoice.paid", idempotencyKey: "k2", payload: { a: 2 } }, w.ctx());
    });
    assert.ok((await getEvent(db, t.id, after.eventId)) !== undefined, "the transaction committed");
    await assert.rejects(
      ingest(w, t.id, { idempotencyKey: "k", type: "invoice.voided", payload: { a: 1 } }),
      storeError("WEBHOOK_IDEMPOTENCY_CONFLICT"),
    );
  });

  it("bad input is refused before any write, naming the field", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const cases: [string, object][] = [
      ["type", { type: "no spaces allowed" }],
      ["payload", { payload: [1, 2] }],
      ["payload", { payload: null }],
      ["idempotencyKey", { idempotencyKey: "" }],
    ];
    for (const [field, event] of cases) {
      await assert.rejects(ingest(w, t.id, event), storeError("WEBHOOK_EVENT_INVALID", field), field);
    }
    await assert.rejects(
      ingestEvent(
        db,
        t.id,
        { type: "a.b", payload: { blob: "x".repeat(2_000) } },
        { ...w.ctx(), maxPayloadBytes: 1_024 },
      ),
      storeError("WEBHOOK_EVENT_TOO_LARGE"),
    );
    await assert.rejects(ingest(w, "no-such-tenant"), storeError("WEBHOOK_TENANT_NOT_FOUND"));
    await assert.rejects(
      ingest(w, "no-such-tenant", { idempotencyKey: "z" }),
      storeError("WEBHOOK_TENANT_NOT_FOUND"),
    );
    const { rows } = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM events WHERE tenant_id = $1", [
      t.id,
    ]);
    assert.equal(rows[0]!.n, 0n);
  });
});
