/**
 * Worlds for the worker's bench and process tests: a tenant whose subscriptions point at
 * a local receiver (created through the store, with a known secret), and a backlog of
 * committed, fanned-out events written set-wise — 50,000 deliveries in a few statements
 * instead of 50,000 ingests. The seeding is not what is measured: what comes after is.
 * Rows are what ingest + fan-out would have written: event, delivery per subscription,
 * due now, deadline at creation + the tenant's window.
 *
 * @example
 * const { tenantId, subscriptionIds } = await createReceiverTenant(db, { name: "a", url: receiver.url("/a"), secret });
 * await seedBacklog(db, { tenantId, subscriptionIds, events: 10_000, nowMs: Date.now() });
 */
import { randomBytes } from "node:crypto";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { createSubscription } from "../src/store/subscription-repository.ts";
import { createTenant } from "../src/store/tenant-repository.ts";

/** Events per INSERT statement: bounds one statement's memory and duration. */
export const SEED_CHUNK_EVENTS = 5_000;
/** Largest backlog seeded at once. */
export const MAX_SEED_EVENTS = 1_000_000;

/** A fresh `whsec_` secret (24 random bytes). */
export function newTestSecret(): string {
  return `whsec_${randomBytes(24).toString("base64")}`;
}

export interface ReceiverTenant {
  tenantId: string;
  subscriptionIds: string[];
}

/** A tenant with `subscriptions` endpoints at `url` (path suffixed `-<i>` when more than one). */
export async function createReceiverTenant(
  db: Database,
  input: {
    name: string;
    url: string;
    secret: string;
    weight?: number;
    subscriptions?: number;
    maxConcurrency?: number;
    nowMs?: number;
  },
): Promise<ReceiverTenant> {
  const ctx = { nowMs: input.nowMs ?? Date.now(), randomBytes: (n: number) => randomBytes(n) };
  const { tenant } = await createTenant(db, { name: input.name, weight: input.weight ?? 1 }, ctx);
  const count = input.subscriptions ?? 1;
  const subscriptionIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const url = count === 1 ? input.url : `${input.url}-${i}`;
    const { subscription } = await createSubscription(
      db,
      tenant.id,
      { url, secret: input.secret, maxConcurrency: input.maxConcurrency ?? 100 },
      ctx,
    );
    subscriptionIds.push(subscription.id);
  }
  return { tenantId: tenant.id, subscriptionIds };
}

export interface BacklogInput extends ReceiverTenant {
  events: number;
  /** Commit time of every event and due time of every delivery. */
  nowMs: number;
  /** Approximate JSON payload size (the seed's 2 KiB by default). */
  payloadBytes?: number;
}

// $1 tenant, $2 subscriptions, $3 first n, $4 last n, $5 now, $6 padding.
const SEED = `
  WITH e AS (
    INSERT INTO events (id, tenant_id, type, payload, payload_hash, payload_bytes, payload_expires_at, created_at)
    SELECT 'msg_' || md5($1 || ':' || g::text), t.id, 'bench.tick', jsonb_build_object('n', g, 'pad', $6::text),
           md5(g::text) || md5($1), 16 + length($6::text), $5::timestamptz + make_interval(secs => t.payload_retention_s), $5
      FROM tenants t, generate_series($3::int, $4::int) AS g WHERE t.id = $1
    RETURNING id, seq, tenant_id, created_at)
  INSERT INTO deliveries (id, event_id, event_seq, subscription_id, tenant_id, state, next_attempt_at,
                          deadline_at, created_at, updated_at)
  SELECT 'dlv_' || md5(e.id || s.id), e.id, e.seq, s.id, e.tenant_id, 'pending', $5,
         e.created_at + make_interval(secs => t.delivery_window_s), $5, $5
    FROM e JOIN tenants t ON t.id = e.tenant_id CROSS JOIN unnest($2::text[]) AS s(id)`;

/** Writes `events` committed events and their deliveries (events × subscriptions), due at `nowMs`. */
export async function seedBacklog(q: Queryable, input: BacklogInput): Promise<void> {
  if (!Number.isSafeInteger(input.events) || input.events < 1 || input.events > MAX_SEED_EVENTS)
    throw new RangeError(`events must be 1..${MAX_SEED_EVENTS}`);
  const pad = "x".repeat(Math.max(0, (input.payloadBytes ?? 2_048) - 32));
  const { rows } = await q.query<{ n: bigint }>("SELECT count(*) AS n FROM events WHERE tenant_id = $1", [
    input.tenantId,
  ]);
  const offset = Number(rows[0]!.n);
  for (let first = 1; first <= input.events; first += SEED_CHUNK_EVENTS) {
    const last = Math.min(input.events, first + SEED_CHUNK_EVENTS - 1);
    await q.query(SEED, [
      input.tenantId,
      input.subscriptionIds,
      offset + first,
      offset + last,
      new Date(input.nowMs),
      pad,
    ]);
  }
}
