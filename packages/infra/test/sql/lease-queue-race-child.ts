/**
 * A claimer PROCESS for lease-queue-race.test.ts, on the real PostgreSQL: its own pool on
 * the test schema. It says "ready", then for each `round` message claims batches at the
 * round's `nowMs` (the parent's clock: every earlier lease has ended by then) until none is
 * left, records every claim in `race_claims` (no unique constraint: a double claim would
 * show as two rows), and — when the round says `complete` — settles its claims with one
 * fenced batch, reporting how many writes won.
 *
 * argv: <database url> <schema> <table> <owner>
 */

import { type Lease, LeaseQueue } from "../../src/sql/lease-queue.ts";
import { openDatabase } from "../../src/sql/open-database.ts";

const [url, schema, table, ownerArg] = process.argv.slice(2);
if (!url || !schema || !table || !ownerArg) throw new Error("usage: <url> <schema> <table> <owner>");
const owner: string = ownerArg;
/** Small enough that the claimers interleave many times per round. */
const BATCH = 25;
/** Bound on claim batches per round: 4 000 rows need 160 of 25 even for a lone claimer. */
const MAX_BATCHES = 1_000;
const LEASE_MS = 60_000;

const db = await openDatabase({ system: "lease-race", url, schema, pool: { maxConnections: 2 } });
const queue = new LeaseQueue<{ id: string }, string>({
  table,
  idType: "text",
  claimable: "t.done_at IS NULL",
  returning: "t.id",
  minLeaseMs: 1_000,
});

interface Round {
  kind: "round";
  round: number;
  nowMs: number;
  complete: boolean;
}

const send = (message: unknown) =>
  new Promise<void>((resolve, reject) =>
    process.send!(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );

async function round(r: Round): Promise<void> {
  const held: Lease<string>[] = [];
  for (let batch = 0; batch < MAX_BATCHES; batch++) {
    const claimed = await queue.claim(db, { owner, nowMs: r.nowMs, leaseMs: LEASE_MS, limit: BATCH });
    if (claimed.length === 0) break;
    await db.query(
      `INSERT INTO race_claims (round, id, owner, lease_version)
       SELECT $1, c.id, $2, c.v FROM unnest($3::text[], $4::int8[]) AS c(id, v)`,
      [r.round, owner, claimed.map((c) => c.lease.id), claimed.map((c) => c.lease.leaseVersion)],
    );
    held.push(...claimed.map((c) => c.lease));
  }
  let won = 0;
  if (r.complete && held.length > 0) {
    const writes = await queue.updateMany(db, held, { nowMs: r.nowMs, set: (p) => `done_at = ${p.now}` });
    won = writes.filter((w) => w.won).length;
  }
  await send({ kind: "claimed", round: r.round, claimed: held.length, won });
}

process.on("message", (message: Round | "stop") => {
  if (message === "stop") {
    void db.close().finally(() => process.disconnect());
    return;
  }
  round(message).catch((err) => {
    process.stderr.write(`${owner}: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
});
await send({ kind: "ready" });
