/**
 * Test worlds for the webhook store: a database, a manual clock and seeded random bytes
 * (ids and keys reproducible within a run, distinct across tests), plus the few seeding
 * steps every suite repeats — a tenant, a subscription, an event published by the relay.
 */
import type { Database } from "@casebook/infra/sql/sql";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { uniqueName } from "@casebook/lab/test-engines";
import type { RandomBytes } from "../src/domain/store-ids.ts";
import { type StoreErrorCode, storeErrors } from "../src/errors.ts";
import { type ClaimedDelivery, claimDueForTenant } from "../src/store/delivery-claims.ts";
import { type EnqueuedEvent, ingestEvent, type NewEvent } from "../src/store/event-repository.ts";
import {
  createSubscription,
  type NewSubscription,
  type Subscription,
} from "../src/store/subscription-repository.ts";
import {
  createTenant,
  type NewTenant,
  type Tenant,
  type WriteContext,
} from "../src/store/tenant-repository.ts";
import { Dispatcher } from "../src/workers/dispatcher.ts";
import { OutboxRelay } from "../src/workers/outbox-relay.ts";

/** 2025-01-01T00:00:00Z: every world starts here unless told otherwise. */
export const T0_MS = Date.UTC(2025, 0, 1);
export const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;
export const HTTP_DEADLINE_MS = 10_000;
export const LEASE_MS = 30_000;

export interface World {
  db: Database;
  clock: ManualClock;
  randomBytes: RandomBytes;
  ctx(): WriteContext;
}

export function newWorld(db: Database, startMs = T0_MS): World {
  const rng = seededRandom(uniqueName("webhooks"));
  const randomBytes: RandomBytes = (size) => {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = Math.floor(rng.next() * 256);
    return bytes;
  };
  const clock = new ManualClock(startMs);
  return { db, clock, randomBytes, ctx: () => ({ nowMs: clock.nowMs(), randomBytes }) };
}

export async function seedTenant(w: World, input: Partial<NewTenant> = {}): Promise<Tenant> {
  const { tenant } = await createTenant(w.db, { name: "Acme", ...input }, w.ctx());
  return tenant;
}

export async function seedSubscription(
  w: World,
  tenantId: string,
  input: Partial<NewSubscription> = {},
): Promise<Subscription> {
  const { subscription } = await createSubscription(
    w.db,
    tenantId,
    { url: "https://hooks.example.com/in", ...input },
    w.ctx(),
  );
  return subscription;
}

export function ingest(w: World, tenantId: string, event: Partial<NewEvent> = {}): Promise<EnqueuedEvent> {
  return ingestEvent(w.db, tenantId, { type: "invoice.paid", payload: { n: 1 }, ...event }, w.ctx());
}

/** Runs a relay on the world's clock until nothing is due: every committed event fanned out. */
export async function relayAll(w: World): Promise<void> {
  const relay = new OutboxRelay(w.db, {
    publisher: new Dispatcher(w.db, { clock: w.clock }),
    clock: w.clock,
    owner: "test-relay",
    onError: (err) => {
      throw err;
    },
  });
  for (let round = 0; round < 1_000; round++) if ((await relay.runOnce()).claimed === 0) return;
  throw new Error("relayAll: the outbox did not drain in 1000 rounds");
}

export function claim(
  w: World,
  tenantId: string,
  options: { workerId?: string; limit?: number; leaseMs?: number } = {},
): Promise<ClaimedDelivery[]> {
  return claimDueForTenant(w.db, tenantId, {
    workerId: options.workerId ?? "w1",
    nowMs: w.clock.nowMs(),
    leaseMs: options.leaseMs ?? LEASE_MS,
    httpDeadlineMs: HTTP_DEADLINE_MS,
    limit: options.limit ?? 100,
  });
}

/** One row of a table, for assertions that read the database directly. */
export async function deliveryRow(
  db: Database,
  id: string,
): Promise<{ state: string; attempts: number; lease_version: bigint; state_reason: string | null }> {
  const { rows } = await db.query<{
    state: string;
    attempts: number;
    lease_version: bigint;
    state_reason: string | null;
  }>("SELECT state, attempts, lease_version, state_reason FROM deliveries WHERE id = $1", [id]);
  if (!rows[0]) throw new Error(`no delivery ${id}`);
  return rows[0];
}

/** An assert.rejects/throws predicate: a store error with `code` (and `fields.field === field` when given). */
export function storeError(code: StoreErrorCode, field?: string): (err: unknown) => boolean {
  return (err) => storeErrors.is(err, code) && (field === undefined || err.fields.field === field);
}
