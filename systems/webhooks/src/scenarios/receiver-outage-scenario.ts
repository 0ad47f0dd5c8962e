/**
 * The console's fault scenario for webhooks (003: "an endpoint that fails, then recovers"; WH-17,
 * WH-18 retries with backoff, WH-01 at-least-once shown live): a world of its own — an in-memory
 * PGlite database (migrated, never this service's store), a tenant with one subscription, the
 * outbox relay and a delivery worker — sending to a PRIVATE receiver on a loopback port (the demo
 * receiver, verifying each signature). Events arrive while the receiver is up, it goes down
 * (closed: connections refused) while more arrive, then it comes back on the same port. The plot
 * counts, as they grow, the attempts failed, the events waiting and the events delivered; the
 * sentence says how many attempts failed, the backoff's gaps in the longest chain,
 * whether every event was delivered once the receiver was back, and any duplicate.
 *
 * The text's outage lasts a minute with a 2 s base; a console run is bounded at 60 s, so the
 * outage is `outageMs` (10 s) and the backoff base 1 s, cap 8 s — the same capped exponential
 * with equal jitter (domain/retry-policy.ts), on a shorter scale.
 *
 * @example
 * new ScenarioRuns([receiverOutageScenario()]);
 */
import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { HttpSender } from "../clients/http-sender.ts";
import { RetryPolicy } from "../domain/retry-policy.ts";
import { createUrlPolicy } from "../domain/url-policy.ts";
import { LEASE_HEADROOM_MS } from "../store/delivery-claims.ts";
import { ingestEvent } from "../store/event-repository.ts";
import { migrateWebhookStore } from "../store/migrate.ts";
import { createSubscription } from "../store/subscription-repository.ts";
import { createTenant } from "../store/tenant-repository.ts";
import { type DemoReceiver, startDemoReceiver } from "../tools/demo-receiver.ts";
import { DeliveryWorker } from "../workers/delivery-worker.ts";
import { Dispatcher } from "../workers/dispatcher.ts";
import { OutboxRelay } from "../workers/outbox-relay.ts";

export interface ReceiverOutageOptions {
  /** Events sent while the receiver is up, before the outage. Default 3. */
  eventsBefore?: number;
  /** Events sent during the outage, evenly spread. Default 5. */
  eventsDuring?: number;
  /** How long the receiver is down. Default 10 000. */
  outageMs?: number;
  /** Longest wait, once it is back, for every delivery to succeed. Default 30 000. */
  recoveryMaxMs?: number;
  /** Backoff of the scenario's worker (the text's 2 s / 300 s, scaled). */
  retryBaseMs?: number;
  retryCapMs?: number;
}

/** Sender phase bounds: generous, a loaded machine must not turn a slow answer into a retry. */
const SENDER_TIMEOUTS = { connectMs: 2_000, headersMs: 5_000, bodyMs: 2_000 };
const HTTP_DEADLINE_MS = 9_000;
/** How often the attempts table is read for new points. */
const WATCH_MS = 250;

interface AttemptRow {
  delivery_id: string;
  attempt_no: number;
  started_at: Date;
  response_class: string;
}

/** The private world: database, receiver, relay, worker; `close` stops all of it, never throwing. */
async function openWorld(retry: { baseMs: number; capMs: number }) {
  const db = await openDatabase({ system: "webhooks", dataDir: "memory://", env: {} });
  const held: { close(): unknown }[] = [{ close: () => db.close() }];
  const close = async () => {
    for (const h of held.reverse()) await Promise.allSettled([h.close()]);
  };
  try {
    await migrateWebhookStore(db);
    const secret = `whsec_${randomBytes(24).toString("base64")}`;
    const receiverOptions = { secrets: [secret], port: 0, log: () => undefined };
    const receiver = { current: (await startDemoReceiver(receiverOptions)) as DemoReceiver | undefined };
    held.push({ close: () => receiver.current?.close() });
    const port = Number(new URL(receiver.current!.url).port);
    const ctx = () => ({ nowMs: Date.now(), randomBytes: (n: number) => randomBytes(n) });
    const { tenant } = await createTenant(db, { name: "scenario: receiver outage" }, ctx());
    const url = `${receiver.current!.url}/hooks`;
    await createSubscription(db, tenant.id, { url, secret, maxConcurrency: 8 }, ctx());
    const relay = new OutboxRelay(db, {
      publisher: new Dispatcher(db, { clock: systemClock }),
      clock: systemClock,
      random: systemRandom,
      pollIntervalMs: 100,
    });
    relay.start();
    held.push({ close: () => relay.stop() });
    const sender = new HttpSender({
      // The private receiver is on loopback: allowed for this world's sender only.
      policy: createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] }),
      timeouts: SENDER_TIMEOUTS,
      maxSocketsPerOrigin: 8,
    });
    held.push({ close: () => sender.close() });
    const worker = new DeliveryWorker({
      db,
      clock: systemClock,
      random: systemRandom,
      workerId: `scenario-${randomUUID().slice(0, 8)}`,
      sender,
      httpDeadlineMs: HTTP_DEADLINE_MS,
      leaseMs: HTTP_DEADLINE_MS + LEASE_HEADROOM_MS,
      maxInFlight: 8,
      pollIntervalMs: 100,
      retryPolicy: new RetryPolicy({ random: systemRandom, baseMs: retry.baseMs, capMs: retry.capMs }),
    });
    worker.start();
    held.push({ close: () => worker.stop() });
    return {
      db,
      tenantId: tenant.id,
      /** Every webhook the receiver accepted, across its restarts. */
      accepted: [] as string[],
      ingest: (i: number) => ingestEvent(db, tenant.id, { type: "scenario.outage", payload: { i } }, ctx()),
      down: async () => {
        const r = receiver.current;
        receiver.current = undefined;
        if (r) {
          await r.close();
          return r.received.map((w) => w.id);
        }
        return [];
      },
      up: async () => {
        receiver.current = await startDemoReceiver({ ...receiverOptions, port });
      },
      receivedNow: () => receiver.current?.received.map((w) => w.id) ?? [],
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

async function statesOf(db: Database, tenantId: string): Promise<Record<string, number>> {
  const { rows } = await db.query<{ state: string; n: number | bigint }>(
    "SELECT state, count(*) AS n FROM deliveries WHERE tenant_id = $1 GROUP BY state",
    [tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/**
 * Reads new attempt rows (for the backoff's gaps) and plots three running counts at each read:
 * attempts failed so far (their steps spread out as the backoff grows), events waiting (queued
 * while the receiver is down) and events delivered (all of them once it is back).
 */
function attemptWatcher(db: Database, tenantId: string, ctx: ScenarioContext, t0Ms: number) {
  const seen = new Set<string>();
  const chains = new Map<string, number[]>();
  let failed = 0;
  return {
    chains,
    failed: () => failed,
    read: async () => {
      const { rows } = await db.query<AttemptRow>(
        `SELECT delivery_id, attempt_no, started_at, response_class FROM attempts
          WHERE tenant_id = $1 ORDER BY started_at`,
        [tenantId],
      );
      for (const row of rows) {
        const key = `${row.delivery_id}/${row.attempt_no}`;
        if (seen.has(key)) continue;
        seen.add(key);
        if (row.response_class !== "2xx") failed += 1;
        chains.set(row.delivery_id, [...(chains.get(row.delivery_id) ?? []), row.started_at.getTime()]);
      }
      const states = await statesOf(db, tenantId);
      const x = Math.round(Date.now() - t0Ms) / 1_000;
      ctx.point("attempts failed so far", x, failed);
      ctx.point("events waiting (not yet delivered)", x, (states.pending ?? 0) + (states.in_flight ?? 0));
      ctx.point("events delivered so far", x, states.succeeded ?? 0);
    },
  };
}

export function receiverOutageScenario(options: ReceiverOutageOptions = {}): Scenario {
  const eventsBefore = options.eventsBefore ?? 3;
  const eventsDuring = options.eventsDuring ?? 5;
  const outageMs = options.outageMs ?? 10_000;
  const recoveryMaxMs = options.recoveryMaxMs ?? 30_000;
  const retry = { baseMs: options.retryBaseMs ?? 1_000, capMs: options.retryCapMs ?? 8_000 };
  const events = eventsBefore + eventsDuring;
  return {
    id: "receiver-outage",
    title: "A receiver that goes down and comes back",
    line: `A private receiver down for ${outageMs / 1_000} s while events keep coming: retries with a growing backoff, then every event delivered once it is back, nothing lost.`,
    xLabel: "s from the start",
    yLabel: "count",
    run: async (ctx) => {
      const { signal } = ctx;
      const world = await openWorld(retry);
      ctx.progress(0.05); // the private database is migrated and the receiver listens
      const watcher = { stop: false };
      let watching: Promise<void> = Promise.resolve();
      try {
        const t0Ms = Date.now();
        const attempts = attemptWatcher(world.db, world.tenantId, ctx, t0Ms);
        watching = (async () => {
          while (!watcher.stop) {
            await attempts.read();
            await sleep(WATCH_MS);
          }
        })().catch(() => undefined); // a read failing as the world closes is no result: the final read says
        const waitUntil = async (done: (s: Record<string, number>) => boolean, boundMs: number) => {
          const endMs = Date.now() + boundMs;
          while (Date.now() < endMs) {
            if (done(await statesOf(world.db, world.tenantId))) return true;
            await sleep(WATCH_MS, undefined, { signal });
          }
          return false;
        };
        for (let i = 0; i < eventsBefore; i++) await world.ingest(i);
        await waitUntil((s) => s.succeeded === eventsBefore, 10_000);
        ctx.progress(0.15);
        world.accepted.push(...(await world.down()));
        const downAtMs = Date.now();
        for (let i = 0; i < eventsDuring; i++) {
          await world.ingest(eventsBefore + i);
          await sleep(outageMs / eventsDuring, undefined, { signal });
          ctx.progress(0.15 + (0.45 * (i + 1)) / eventsDuring);
        }
        await sleep(Math.max(0, downAtMs + outageMs - Date.now()), undefined, { signal });
        await world.up();
        const upAtMs = Date.now();
        const drained = await waitUntil((s) => s.succeeded === events, recoveryMaxMs);
        const lastMs = Date.now() - upAtMs;
        ctx.progress(1);
        watcher.stop = true;
        await watching;
        await attempts.read();
        world.accepted.push(...world.receivedNow());
        const states = await statesOf(world.db, world.tenantId);
        const unique = new Set(world.accepted).size;
        const duplicates = world.accepted.length - unique;
        const longest = [...attempts.chains.values()].sort((a, b) => b.length - a.length)[0] ?? [];
        const gaps = longest.slice(1).map((at, i) => ((at - longest[i]!) / 1_000).toFixed(1));
        const outcome = drained
          ? `all ${events} delivered (${unique} distinct at the receiver, ${events - unique} lost), the last ${(lastMs / 1_000).toFixed(1)} s after it came back`
          : `${states.succeeded ?? 0} of ${events} delivered ${recoveryMaxMs / 1_000} s after it came back (states ${JSON.stringify(states)})`;
        return (
          `${events} events, the receiver down for ${outageMs / 1_000} s: ${attempts.failed()} attempts failed ` +
          `(connection refused); the longest chain retried after ${gaps.join(", ")} s (backoff doubling from ` +
          `${retry.baseMs / 1_000} s, with jitter); ${outcome}; ${duplicates} duplicates.`
        );
      } finally {
        watcher.stop = true;
        await watching;
        await world.close();
      }
    },
  };
}
