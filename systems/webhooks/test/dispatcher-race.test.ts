/**
 * WH-09 / WH-14 under real concurrency (PostgreSQL, separate pools): three relays drain
 * the outbox while a fourth "broker" re-delivers every event to its own dispatcher at the
 * same time — duplicate publishes racing the first ones on other connections. The unique
 * (event_id, subscription_id) still leaves exactly one delivery per pair.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { requirePostgres } from "@casebook/lab/test-engines";
import { ingestEvent } from "../src/store/event-repository.ts";
import { createSubscription } from "../src/store/subscription-repository.ts";
import { createTenant } from "../src/store/tenant-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";
import { openPostgresTestSchema, SYSTEM } from "./store-backends.ts";

const EVENTS = 300;
const SUBSCRIPTIONS = 3;
/** Rounds each relay may run: far more than 300 events in batches of 20 need. */
const MAX_ROUNDS = 200;

test("WH-09 WH-14 three relays and a duplicating broker racing on 300 events: one delivery per (event, subscription)", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema, drop } = await openPostgresTestSchema(url, { prefix: "wh_fanout" });
  const pools: Database[] = [];
  t.after(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await drop();
  });
  const ctx = () => ({ nowMs: Date.now(), randomBytes });
  const { tenant } = await createTenant(db, { name: "race" }, ctx());
  for (let i = 0; i < SUBSCRIPTIONS; i++)
    await createSubscription(db, tenant.id, { url: `https://s${i}.example.com` }, ctx());
  const eventIds: string[] = [];
  for (let i = 0; i < EVENTS; i++)
    eventIds.push((await ingestEvent(db, tenant.id, { type: "a.b", payload: { i } }, ctx())).eventId);
  for (let i = 0; i < 4; i++)
    pools.push(await openDatabase({ system: SYSTEM, url, schema, pool: { maxConnections: 2 } }));
  const relays = pools.slice(0, 3).map(
    (pool, i) =>
      new OutboxRelay(pool, {
        publisher: new Dispatcher(pool),
        owner: `relay-${i}`,
        maxBatch: 20,
        random: seededRandom(i),
        onError: (err) => assert.fail(String(err)),
      }),
  );
  const drain = async (relay: OutboxRelay) => {
    for (let round = 0; round < MAX_ROUNDS; round++) if ((await relay.runOnce()).claimed === 0) return;
  };
  const broker = new Dispatcher(pools[3]!, { clock: systemClock });
  const duplicates = async () => {
    for (const eventId of eventIds) await broker.publish({ eventId, tenantId: tenant.id, publishCount: 2 });
  };
  await Promise.all([...relays.map(drain), duplicates()]);
  const { rows } = await db.query<{ n: bigint; pairs: bigint }>(
    "SELECT count(*) AS n, count(DISTINCT (event_id, subscription_id)) AS pairs FROM deliveries",
  );
  assert.equal(rows[0]!.n, BigInt(EVENTS * SUBSCRIPTIONS));
  assert.equal(rows[0]!.pairs, BigInt(EVENTS * SUBSCRIPTIONS));
  const outbox = await db.query<{ n: bigint }>("SELECT count(*) AS n FROM outbox WHERE published_at IS NULL");
  assert.equal(outbox.rows[0]!.n, 0n, "every event published");
  t.diagnostic(`deliveries created by the broker's duplicates: ${broker.stats.deliveriesCreated}`);
});
