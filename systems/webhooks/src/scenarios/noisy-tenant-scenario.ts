/**
 * The console's fairness scenario for webhooks (003's noisy tenant; WH-15, WH-21 shown live): a
 * world of its own — an in-memory PGlite database (migrated, never this service's store), four
 * tenants with one subscription each, the outbox relay and one delivery worker of `maxInFlight`
 * slots — sending to a PRIVATE receiver on a loopback port (the demo receiver, verifying each
 * signature, answering after `receiverDelayMs`: an endpoint doing its own work, so the worker's
 * slots, not this machine's CPU, are the capacity shared). Three quiet tenants send a trickle the
 * whole run; after a baseline, one noisy tenant floods far above the worker's capacity. Each
 * second the plot gets every tenant's deliveries/s and the quiet tenants' p99 commit→2xx latency
 * in that second; the sentence compares the quiet tenants' p99 before and during the flood, and
 * what the noisy tenant was served of what it sent.
 *
 * Per-tenant fair claiming (tenant-claimer.ts: weighted deficit round robin) and the per-tenant
 * send limit (all but a quarter of the slots) give the noisy tenant what the quiet ones leave and
 * no more; under a global FIFO the quiet tenants would wait behind its whole backlog.
 *
 * @example
 * new ScenarioRuns([noisyTenantScenario()]);
 */
import { randomBytes, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import { openDatabase } from "@casebook/infra/sql/open-database";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { systemRandom } from "@casebook/kit/random";
import { HttpSender } from "../clients/http-sender.ts";
import { createUrlPolicy } from "../domain/url-policy.ts";
import { LEASE_HEADROOM_MS } from "../store/delivery-claims.ts";
import { enqueue, ingestEvent } from "../store/event-repository.ts";
import { migrateWebhookStore } from "../store/migrate.ts";
import { createSubscription } from "../store/subscription-repository.ts";
import { createTenant } from "../store/tenant-repository.ts";
import { startDemoReceiver } from "../tools/demo-receiver.ts";
import { DeliveryWorker } from "../workers/delivery-worker.ts";
import { Dispatcher } from "../workers/dispatcher.ts";
import { OutboxRelay } from "../workers/outbox-relay.ts";

export interface NoisyTenantOptions {
  /** Seconds of quiet traffic alone, before the flood. Default 4. */
  baselineS?: number;
  /** Seconds of flood. Default 12. */
  floodS?: number;
  /** Events each quiet tenant sends per second. Default 1. */
  quietPerS?: number;
  /** Events the noisy tenant sends per second, in bursts (one transaction each). Default 20. */
  noisyPerS?: number;
  /** The worker's send slots. Default 4. */
  maxInFlight?: number;
  /** How long the receiver takes to answer. Default 500. */
  receiverDelayMs?: number;
}

const QUIET = ["quiet-1", "quiet-2", "quiet-3"] as const;
const NOISY = "noisy";
const SENDER_TIMEOUTS = { connectMs: 2_000, headersMs: 5_000, bodyMs: 2_000 };
const HTTP_DEADLINE_MS = 9_000;
/** The noisy tenant's sends come in bursts this often, each burst one transaction (a batch producer). */
const FLOOD_TICK_MS = 500;
/** Ticks' worth of events one burst may carry when catching up. */
const MAX_CATCH_UP_TICKS = 4;
/** Bound on the warm-up's four deliveries. */
const WARM_UP_MAX_MS = 10_000;
/** Attempts are read back this far behind the last read: a send in flight then is recorded later. */
const READ_SLACK_MS = HTTP_DEADLINE_MS + 1_000;

interface Completed {
  key: string;
  tenant: string;
  doneMs: number;
  latencyMs: number;
}

/** Nearest-rank percentile; 0 for none. */
function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The private world: database, receiver, four tenants, relay, worker; `close` stops all of it. */
async function openWorld(options: Required<NoisyTenantOptions>) {
  const db = await openDatabase({ system: "webhooks", dataDir: "memory://", env: {} });
  const held: { close(): unknown }[] = [{ close: () => db.close() }];
  const close = async () => {
    for (const h of held.reverse()) await Promise.allSettled([h.close()]);
  };
  try {
    await migrateWebhookStore(db);
    const secret = `whsec_${randomBytes(24).toString("base64")}`;
    const receiver = await startDemoReceiver({
      secrets: [secret],
      port: 0,
      delayMs: options.receiverDelayMs,
      maxRemembered: 10,
      log: () => undefined,
    });
    held.push(receiver);
    const ctx = () => ({ nowMs: Date.now(), randomBytes: (n: number) => randomBytes(n) });
    const tenants = new Map<string, string>();
    for (const name of [NOISY, ...QUIET]) {
      const { tenant } = await createTenant(db, { name: `scenario: ${name}` }, ctx());
      const url = `${receiver.url}/hooks/${name}`;
      await createSubscription(db, tenant.id, { url, secret, maxConcurrency: options.maxInFlight }, ctx());
      tenants.set(tenant.id, name);
    }
    const relay = new OutboxRelay(db, {
      publisher: new Dispatcher(db, { clock: systemClock }),
      clock: systemClock,
      random: systemRandom,
      pollIntervalMs: 50,
    });
    relay.start();
    held.push({ close: () => relay.stop() });
    const sender = new HttpSender({
      // The private receiver is on loopback: allowed for this world's sender only.
      policy: createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] }),
      timeouts: SENDER_TIMEOUTS,
      maxSocketsPerOrigin: options.maxInFlight,
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
      maxInFlight: options.maxInFlight,
      pollIntervalMs: 50,
    });
    worker.start();
    held.push({ close: () => worker.stop() });
    const idOf = (name: string) => [...tenants].find(([, n]) => n === name)![0];
    return {
      db,
      tenants,
      ingest: (name: string, i: number) =>
        ingestEvent(db, idOf(name), { type: "scenario.noisy", payload: { i } }, ctx()),
      /** `count` events of `name` in one transaction, as a batch producer sends them. */
      ingestBurst: (name: string, first: number, count: number) =>
        db.transaction(async (tx) => {
          for (let i = first; i < first + count; i++)
            await enqueue(tx, idOf(name), { type: "scenario.noisy", payload: { i } }, ctx());
        }),
      /** Waits until `count` deliveries succeeded, at most `maxMs`. */
      delivered: async (count: number, maxMs: number, signal: AbortSignal) => {
        const endMs = Date.now() + maxMs;
        while (Date.now() < endMs) {
          const { rows } = await db.query<{ n: number | bigint }>(
            "SELECT count(*) AS n FROM deliveries WHERE state = 'succeeded'",
          );
          if (Number(rows[0]!.n) >= count) return;
          await sleep(100, undefined, { signal });
        }
      },
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** Successful attempts completed after `sinceMs`, with their commit→2xx latency. */
async function completedSince(db: Database, tenants: Map<string, string>, sinceMs: number) {
  const { rows } = await db.query<{
    delivery_id: string;
    tenant_id: string;
    done: Date;
    ms: number | string;
  }>(
    `SELECT a.delivery_id, a.tenant_id, a.started_at + make_interval(secs => a.duration_ms / 1000.0) AS done,
            extract(epoch FROM a.started_at - e.created_at) * 1000 + a.duration_ms AS ms
       FROM attempts a JOIN deliveries d ON d.id = a.delivery_id JOIN events e ON e.id = d.event_id
      WHERE a.response_class = '2xx' AND a.started_at > $1`,
    [new Date(sinceMs)],
  );
  return rows.map(
    (r): Completed => ({
      key: r.delivery_id,
      tenant: tenants.get(r.tenant_id) ?? "?",
      doneMs: r.done.getTime(),
      latencyMs: Number(r.ms),
    }),
  );
}

export function noisyTenantScenario(options: NoisyTenantOptions = {}): Scenario {
  const o: Required<NoisyTenantOptions> = {
    baselineS: options.baselineS ?? 5,
    floodS: options.floodS ?? 15,
    quietPerS: options.quietPerS ?? 0.5,
    noisyPerS: options.noisyPerS ?? 10,
    maxInFlight: options.maxInFlight ?? 4,
    receiverDelayMs: options.receiverDelayMs ?? 1_000,
  };
  const capacity = Math.round((o.maxInFlight * 1_000) / o.receiverDelayMs);
  return {
    id: "noisy-tenant",
    title: "One noisy tenant beside three quiet ones",
    line: `Three quiet tenants send ${o.quietPerS}/s each; after ${o.baselineS} s one tenant floods at ${o.noisyPerS}/s, above the worker's ~${capacity}/s: fair scheduling keeps the quiet tenants' p99 bounded and gives the noisy one what is left.`,
    xLabel: "s from the start",
    yLabel: "deliveries/s (the p99 line: ms)",
    run: async (ctx) => {
      const { signal } = ctx;
      const world = await openWorld(o);
      // Warm-up: one event of each tenant delivered before the clock starts (a cold first claim and
      // connection are no part of what is measured).
      for (const name of [NOISY, ...QUIET]) await world.ingest(name, -1);
      await world.delivered(QUIET.length + 1, WARM_UP_MAX_MS, signal);
      ctx.progress(0.05); // the private database is migrated, the receiver listens, the pipeline is warm
      const stop = { now: false };
      const loops: Promise<unknown>[] = [];
      const failures: string[] = [];
      /** A sender's loop; a failed ingest stops it and is named in the result. */
      const loop = (body: () => Promise<void>) =>
        loops.push(body().catch((error: Error) => failures.push(error.message)));
      try {
        const t0Ms = Date.now();
        const floodFromMs = t0Ms + o.baselineS * 1_000;
        const endMs = floodFromMs + o.floodS * 1_000;
        const sent = new Map<string, number>([[NOISY, 0], ...QUIET.map((q) => [q, 0] as const)]);
        const send = async (name: string) => {
          const i = sent.get(name)!;
          sent.set(name, i + 1);
          await world.ingest(name, i);
        };
        // The quiet tenants' trickle, evenly spaced and out of phase with each other.
        for (const [k, name] of QUIET.entries()) {
          loop(async () => {
            await sleep((k * 1_000) / o.quietPerS / QUIET.length);
            while (!stop.now && Date.now() < endMs) {
              await send(name);
              await sleep(1_000 / o.quietPerS);
            }
          });
        }
        // The noisy tenant: a burst every FLOOD_TICK_MS from the end of the baseline, sized to what
        // the rate owes by now — a burst that overran its tick (a busy host) is caught up by the
        // next, so the flood keeps its rate (open loop), up to MAX_CATCH_UP_TICKS ticks at once.
        loop(async () => {
          await sleep(Math.max(0, floodFromMs - Date.now()), undefined, { signal });
          const perTick = Math.max(1, Math.round((o.noisyPerS * FLOOD_TICK_MS) / 1_000));
          while (!stop.now && Date.now() < endMs) {
            const next = Date.now() + FLOOD_TICK_MS;
            const first = sent.get(NOISY)!;
            const owed = Math.floor(((Date.now() - floodFromMs) * o.noisyPerS) / 1_000) + perTick - first;
            const burst = Math.min(Math.max(owed, 1), perTick * MAX_CATCH_UP_TICKS);
            sent.set(NOISY, first + burst);
            await world.ingestBurst(NOISY, first, burst);
            await sleep(Math.max(0, next - Date.now()));
          }
        });
        const seen = new Set<string>();
        const all: Completed[] = [];
        let readFromMs = t0Ms;
        for (let second = 1; t0Ms + second * 1_000 <= endMs; second++) {
          await sleep(Math.max(0, t0Ms + second * 1_000 - Date.now()), undefined, { signal });
          const fresh = (await completedSince(world.db, world.tenants, readFromMs - READ_SLACK_MS)).filter(
            (c) => !seen.has(c.key),
          );
          readFromMs = Date.now();
          for (const c of fresh) seen.add(c.key);
          all.push(...fresh.filter((c) => c.doneMs > t0Ms)); // not the warm-up's
          const inSecond = all.filter(
            (c) => c.doneMs > t0Ms + (second - 1) * 1_000 && c.doneMs <= t0Ms + second * 1_000,
          );
          for (const name of [NOISY, ...QUIET]) {
            ctx.point(`${name}: deliveries/s`, second, inSecond.filter((c) => c.tenant === name).length);
          }
          const quiet = inSecond.filter((c) => c.tenant !== NOISY).map((c) => c.latencyMs);
          if (quiet.length > 0)
            ctx.point("quiet tenants' p99 latency (ms)", second, Math.round(percentile(quiet, 99)));
          ctx.progress(0.05 + (0.95 * (t0Ms + second * 1_000 - t0Ms)) / (endMs - t0Ms));
        }
        stop.now = true;
        await Promise.allSettled(loops);
        const quietBefore = all
          .filter((c) => c.tenant !== NOISY && c.doneMs <= floodFromMs)
          .map((c) => c.latencyMs);
        const quietDuring = all
          .filter((c) => c.tenant !== NOISY && c.doneMs > floodFromMs)
          .map((c) => c.latencyMs);
        const noisyServed = all.filter((c) => c.tenant === NOISY).length;
        const quietSent = QUIET.reduce((n, q) => n + sent.get(q)!, 0);
        const quietServed = quietBefore.length + quietDuring.length;
        const [p50b, p99b, p50d, p99d] = [
          percentile(quietBefore, 50),
          percentile(quietBefore, 99),
          percentile(quietDuring, 50),
          percentile(quietDuring, 99),
        ].map((v) => Math.round(v));
        const noisySent = sent.get(NOISY)!;
        if (failures.length > 0) throw new Error(`a sender failed: ${failures[0]}`);
        const waiting = noisySent - noisyServed;
        const servedPerS = (noisyServed + quietServed) / ((endMs - t0Ms) / 1_000);
        return (
          `The quiet tenants' p50/p99 commit→2xx: ${p50b}/${p99b} ms alone, ${p50d}/${p99d} ms beside the flood ` +
          `(${quietServed} of their ${quietSent} events delivered within the run; the receiver takes ${o.receiverDelayMs} ms); ` +
          `the noisy tenant sent ${noisySent} (${(noisySent / o.floodS).toFixed(0)}/s) and was served ${noisyServed} ` +
          `(${(noisyServed / o.floodS).toFixed(1)}/s; one tenant may hold at most ${o.maxInFlight - Math.floor(o.maxInFlight / 4)} ` +
          `of the worker's ${o.maxInFlight} slots), ${waiting} left waiting — behind which a ` +
          `global FIFO would have put the next quiet event (~${(waiting / Math.max(servedPerS, 0.1)).toFixed(0)} s at ${servedPerS.toFixed(1)} deliveries/s).`
        );
      } finally {
        stop.now = true;
        await Promise.allSettled(loops);
        await world.close();
      }
    },
  };
}
