/**
 * WH-05 "measure what one worker really sustains": one delivery worker PROCESS drains a
 * fixed backlog (the seed's three subscriptions per event) to a local receiver, and its
 * rate is read from the attempts it recorded — `started_at` is stamped by the worker's own
 * clock, first attempt to last, so process start-up and the test's own waits are not
 * counted. The floor is the design text's 60 attempts/s per worker, the number its six
 * workers for the 347/s peak rest on; the bench measures how far above it one worker goes
 * (this is a claim check, not a speed test: the floor is generous, the backlog small).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { requirePostgres } from "@casebook/lab/test-engines";
import { createReceiverTenant, newTestSecret, seedBacklog } from "../bench/backlog.ts";
import { startWebhookReceiver } from "../bench/webhook-receiver.ts";
import { openPostgresTestSchema } from "./store-backends.ts";
import { cleanUpAfterFile, startWorkerProcess, statesOf } from "./worker-fixture.ts";

/** The design text's figure: attempts per second one worker sustains (WH-05). */
const SEED_ATTEMPTS_PER_S = 60;
const SUBSCRIPTIONS = 3;
const EVENTS = 300;
const DELIVERIES = EVENTS * SUBSCRIPTIONS;
/** Bound on the drain: 900 deliveries at a tenth of the floor, and more. */
const DRAIN_WAIT_MS = 180_000;

const { children, receivers, schemas } = cleanUpAfterFile();

test(`WH-05 one worker process drains ${DELIVERIES} deliveries at ≥ ${SEED_ATTEMPTS_PER_S} attempts/s by its own clock, each once`, async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const schema = await openPostgresTestSchema(url, { prefix: "wh_one_worker" });
  schemas.push(schema);
  const secret = newTestSecret();
  const rx = await startWebhookReceiver({ secrets: [secret], keepRequests: false });
  receivers.push(rx);
  const tenant = await createReceiverTenant(schema.db, {
    name: "one-worker",
    url: rx.url("/one"),
    secret,
    subscriptions: SUBSCRIPTIONS,
  });
  await seedBacklog(schema.db, { ...tenant, events: EVENTS, nowMs: Date.now(), payloadBytes: 2_048 });
  // Generous timeouts: a timed-out answer would be retried (WH-14), adding attempts the rate
  // should not count; none is expected, and the test checks it.
  const worker = startWorkerProcess({
    url,
    schema: schema.schema,
    workerId: "only",
    maxInFlight: 32,
    leaseMs: 40_000,
    httpDeadlineMs: 30_000,
    timeouts: { connectMs: 10_000, headersMs: 15_000, bodyMs: 5_000 },
    pollIntervalMs: 10,
    poolMax: 3,
  });
  children.push(worker);
  await worker.next("ready");
  await rx.waitFor(() => rx.requests >= DELIVERIES, DRAIN_WAIT_MS);
  await worker.stop(); // drained: every answer recorded
  assert.equal(rx.countsByKey.size, DELIVERIES, "every delivery reached the receiver");
  assert.deepEqual(await statesOf(schema.db), { succeeded: DELIVERIES });
  const { rows } = await schema.db.query<{ attempts: bigint; first: Date; last: Date; workers: bigint }>(
    `SELECT count(*) AS attempts, min(started_at) AS first, max(started_at) AS last,
            count(DISTINCT worker_id) AS workers FROM attempts`,
  );
  const row = rows[0]!;
  assert.equal(row.attempts, BigInt(DELIVERIES), "one attempt per delivery: the rate counts no retry");
  assert.equal(row.workers, 1n);
  const seconds = Math.max(0.001, (row.last.getTime() - row.first.getTime()) / 1_000);
  const attemptsPerS = (DELIVERIES - 1) / seconds;
  t.diagnostic(
    `one worker: ${DELIVERIES} attempts in ${seconds.toFixed(2)} s = ${attemptsPerS.toFixed(0)} attempts/s`,
  );
  assert.ok(
    attemptsPerS >= SEED_ATTEMPTS_PER_S,
    `one worker sustained ${attemptsPerS.toFixed(1)} attempts/s, below the text's ${SEED_ATTEMPTS_PER_S}`,
  );
});
