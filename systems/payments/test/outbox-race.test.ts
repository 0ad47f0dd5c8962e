/**
 * PY-11 raced for real on PostgreSQL: several relay instances, each on its own pool,
 * publish while several writer pools commit events for a handful of accounts. PGlite
 * cannot show this (one connection; SKIP LOCKED never skips), so it runs on PostgreSQL only.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { seededRandom } from "@casebook/kit/random";
import { requirePostgres } from "@casebook/lab/test-engines";
import { enqueue, streamState } from "../src/store/outbox.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { openPostgresSchema, Recorder, SYSTEM } from "./outbox-backends.ts";

const RELAYS = 4;
const WRITERS = 4;
const ACCOUNTS = 8;
const EVENTS_PER_WRITER = 40;

test("PY-11 four relays on four pools keep per-account commit order and publish each event exactly once", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const main = await openPostgresSchema(url);
  const pools: Database[] = [];
  const relays: OutboxRelay[] = [];
  const recorder = new Recorder();
  const errors: unknown[] = [];
  const perRelay = Array.from({ length: RELAYS }, () => 0);
  try {
    for (let i = 0; i < RELAYS + WRITERS; i++) {
      pools.push(
        await openDatabase({ system: SYSTEM, url, schema: main.schema, pool: { maxConnections: 3 } }),
      );
    }
    const accounts = Array.from({ length: ACCOUNTS }, (_, i) => `acct_${i}`);
    for (const id of accounts) await main.db.query("INSERT INTO accounts_demo (id) VALUES ($1)", [id]);
    for (let i = 0; i < RELAYS; i++) {
      const relay = new OutboxRelay(pools[i]!, {
        publisher: {
          publish: (event) => {
            perRelay[i]! += 1;
            return recorder.publish(event);
          },
        },
        owner: `relay-${i}`,
        maxInFlightKeys: 3,
        maxBatch: 4,
        pollIntervalMs: 5,
        onError: (err) => errors.push(err),
      });
      relays.push(relay);
      relay.start();
    }
    // Each writer's transaction bumps the account's business version (as the ledger bumps
    // a balance) and enqueues an event carrying it: per account, commit order = version order.
    await Promise.all(
      pools.slice(RELAYS).map(async (db, w) => {
        const rng = seededRandom(`outbox-writer-${w}`);
        for (let i = 0; i < EVENTS_PER_WRITER; i++) {
          const account = accounts[Math.floor(rng.next() * ACCOUNTS)]!;
          await db.transaction(async (tx) => {
            const { rows } = await tx.query<{ version: bigint }>(
              "UPDATE accounts_demo SET version = version + 1 WHERE id = $1 RETURNING version",
              [account],
            );
            await enqueue(tx, {
              orderingKey: account,
              type: "account.changed",
              payload: { version: rows[0]!.version },
            });
          });
        }
      }),
    );
    const total = WRITERS * EVENTS_PER_WRITER;
    await recorder.until(
      () => new Set(recorder.events.map((e) => e.eventId)).size === total,
      `${total} events`,
    );
    await Promise.all(relays.map((r) => r.stop()));
    assert.deepEqual(errors, []);
    assert.ok(perRelay.filter((n) => n > 0).length >= 2, `relays shared the work: ${perRelay.join(",")}`);
    assert.equal(recorder.events.length, total, "no crash, no lease expiry: each event exactly once");
    for (const account of accounts) {
      const published = recorder.events.filter((e) => e.orderingKey === account);
      const versions = published.map((e) => String(e.payload.version));
      const expected = Array.from({ length: published.length }, (_, i) => String(i + 1));
      assert.deepEqual(versions, expected, `${account}: published in commit order`);
      const state = await streamState(main.db, account);
      assert.equal(state?.publishedSeq, state?.lastSeq);
    }
  } finally {
    await Promise.all(relays.map((r) => r.stop()));
    await Promise.all(pools.map((p) => p.close()));
    await main.drop();
  }
});
