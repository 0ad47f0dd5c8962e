/**
 * PY-02 raced for real: several PROCESSES and several POOLS call begin() on one key at
 * the same instant against the real PostgreSQL. PGlite cannot show this (one
 * connection, transactions in series), so these run on PostgreSQL only.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import type { BeginResult } from "../../src/sql/idempotency-store.ts";
import { openDatabase } from "../../src/sql/open-database.ts";
import type { Database } from "../../src/sql/sql.ts";
import { idempotencyErrors, idempotencyStore, openPostgresSchema, SYSTEM } from "./idempotency-backends.ts";

const CHILD = fileURLToPath(new URL("./idempotency-race-child.ts", import.meta.url));
const PROCESSES = 4;
const POOLS = 8;
const ROUNDS = 20;
/** Bound on a child's start-up (Node + TypeScript + a connection) and on its answer. */
const CHILD_TIMEOUT_MS = 30_000;
const LEASE_MS = 60_000;
const T0 = Date.UTC(2026, 9, 22, 12, 0, 0);
const PAY = fingerprintRequest({ method: "POST", path: "/payments", body: { amount: "5000" } });
const RESPONSE = {
  status: 201,
  headers: { "content-type": "application/json" },
  body: new Uint8Array([123, 125]),
};

/** Outcome of one begin(): "started", "replay" or the error code. */
async function outcome(promise: Promise<BeginResult>): Promise<string> {
  try {
    return (await promise).kind;
  } catch (err) {
    if (!idempotencyErrors.is(err)) throw err;
    return err.code;
  }
}

function tally(outcomes: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const o of outcomes) counts[o] = (counts[o] ?? 0) + 1;
  return counts;
}

describe("idempotency races on PostgreSQL", () => {
  let url: string | undefined;
  let main: Awaited<ReturnType<typeof openPostgresSchema>> | undefined;
  const pools: Database[] = [];

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (!url) return;
    main = await openPostgresSchema(url);
    for (let i = 0; i < POOLS; i++) {
      const db = await openDatabase({
        system: SYSTEM,
        url,
        schema: main.schema,
        pool: { maxConnections: 1 },
      });
      await db.query("SELECT 1"); // connect now, so the race below is on the INSERT, not on connecting
      pools.push(db);
    }
  });

  after(async () => {
    for (const db of pools) await db.close();
    await main?.drop();
  });

  test(`PY-02 ${PROCESSES} processes racing begin() on one key: exactly one starts, the others get IN_PROGRESS`, async (t) => {
    if (engineFree(t)) return;
    if (!url || !main) return t.skip("PostgreSQL not reachable");
    const merchantId = uniqueName("m_proc");
    const args = [url, main.schema, merchantId, "race-key", String(T0)];
    const children: SpawnedChild[] = [];
    try {
      // Each child's first line is its ready line, whatever it says: asserted below.
      const timeouts = { readyTimeoutMs: CHILD_TIMEOUT_MS, lineTimeoutMs: CHILD_TIMEOUT_MS };
      await Promise.all(
        Array.from({ length: PROCESSES }, async () =>
          children.push(await spawnChild(CHILD, { args, ...timeouts })),
        ),
      );
      const ready = children.map((child) => child.readyLine);
      assert.deepEqual(ready, Array(PROCESSES).fill("ready"));
      const answers = children.map((child) => child.nextLine());
      for (const child of children) child.send("go"); // the barrier opens for all at once
      const outcomes = (await Promise.all(answers)).map(
        (line) => (JSON.parse(line) as { outcome: string }).outcome,
      );
      assert.deepEqual(tally(outcomes), { started: 1, TEST_IDEMPOTENCY_IN_PROGRESS: PROCESSES - 1 });
      const { rows } = await main.db.query("SELECT generation FROM idempotency_keys WHERE merchant_id = $1", [
        merchantId,
      ]);
      assert.deepEqual(rows, [{ generation: 1 }]);
    } finally {
      await Promise.all(children.map((child) => child.kill()));
    }
  });

  test(`PY-02 ${POOLS} pools racing begin() on one key, ${ROUNDS} rounds: one starts, then all replay one response`, async (t) => {
    if (engineFree(t)) return;
    if (!main) return t.skip("PostgreSQL not reachable");
    const merchantId = uniqueName("m_pools");
    const stores = pools.map((db) => idempotencyStore(db, { leaseS: LEASE_MS / 1000 }));
    for (let round = 0; round < ROUNDS; round++) {
      const key = `key-${round}`;
      const raced = stores.map((store) =>
        store.begin({ scope: merchantId, key, fingerprint: PAY, nowMs: T0 }),
      );
      const results = await Promise.allSettled(raced);
      const winners = results.flatMap((r) =>
        r.status === "fulfilled" && r.value.kind === "started" ? [r.value] : [],
      );
      assert.equal(winners.length, 1, `round ${round}`);
      assert.deepEqual(tally(await Promise.all(raced.map(outcome))), {
        started: 1,
        TEST_IDEMPOTENCY_IN_PROGRESS: POOLS - 1,
      });
      await main.db.transaction((tx) => stores[0]!.complete(tx, winners[0]!.lease, RESPONSE, T0 + 1));
      const replays = await Promise.all(
        stores.map((s) => s.begin({ scope: merchantId, key, fingerprint: PAY, nowMs: T0 + 2 })),
      );
      for (const replay of replays) assert.deepEqual(replay, { kind: "replay", response: RESPONSE });
    }
  });

  test(`${POOLS} pools racing to take over one crashed claim, ${ROUNDS} rounds: the compare-and-set lets exactly one in`, async (t) => {
    if (engineFree(t)) return;
    if (!main) return t.skip("PostgreSQL not reachable");
    const merchantId = uniqueName("m_takeover");
    const stores = pools.map((db) => idempotencyStore(db, { leaseS: LEASE_MS / 1000 }));
    for (let round = 0; round < ROUNDS; round++) {
      const key = `key-${round}`;
      const crashed = await stores[0]!.begin({ scope: merchantId, key, fingerprint: PAY, nowMs: T0 });
      assert.equal(crashed.kind, "started"); // and its owner never comes back
      const nowMs = T0 + LEASE_MS;
      const raced = stores.map((store) => store.begin({ scope: merchantId, key, fingerprint: PAY, nowMs }));
      const results = await Promise.allSettled(raced);
      const winners = results.flatMap((r) =>
        r.status === "fulfilled" && r.value.kind === "started" ? [r.value] : [],
      );
      assert.equal(winners.length, 1, `round ${round}`);
      assert.equal(winners[0]!.lease.generation, 2);
      assert.deepEqual(tally(await Promise.all(raced.map(outcome))), {
        started: 1,
        TEST_IDEMPOTENCY_IN_PROGRESS: POOLS - 1,
      });
    }
  });
});
