/**
 * The lease queue raced by claimer PROCESSES on the real PostgreSQL (ARCHITECTURE: every
 * "never twice" is tested with several processes on one engine). Four processes, each with
 * its own pool, claim 4 000 rows of one table in three lease rounds: each round's time is
 * past every earlier lease, so every row is claimable again. In every round each row is
 * claimed exactly once (none twice, none missing) under the round's version, the work is
 * shared, and in the last round every fenced write wins.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres } from "@casebook/lab/test-engines";

const CHILD = fileURLToPath(new URL("./lease-queue-race-child.ts", import.meta.url));
/** Bound on any wait for a child: generous for a loaded 2-core machine, still finite. */
const CHILD_WAIT_MS = 60_000;
const ROWS = 4_000;
const ROUNDS = 3;
const LEASE_MS = 60_000;
const T0 = Date.UTC(2026, 0, 1);

type Message = { kind: "ready" } | { kind: "claimed"; round: number; claimed: number; won: number };

/** The child's next message of `kind`, within CHILD_WAIT_MS; rejects if the child exits first. */
function nextMessage<K extends Message["kind"]>(
  child: SpawnedChild,
  kind: K,
): Promise<Extract<Message, { kind: K }>> {
  return child.nextMessage((message) => (message as Message).kind === kind, CHILD_WAIT_MS);
}

test("four claimer processes, three lease rounds over 4,000 rows: each row claimed exactly once per round, no double owner", async (t) => {
  const url = await requirePostgres(t);
  if (!url) return;
  const { db, schema, drop } = await openPostgresTestSchema(url, {
    system: "lease-race",
    prefix: "lease_race",
    prepare: async (d) => {
      await d.exec(`CREATE TABLE race_jobs (id text PRIMARY KEY, done_at timestamptz, next_attempt_at timestamptz NOT NULL,
        lease_owner text, lease_expires_at timestamptz, lease_version int8 NOT NULL DEFAULT 0);
        CREATE TABLE race_claims (round int4 NOT NULL, id text NOT NULL, owner text NOT NULL, lease_version int8 NOT NULL)`);
    },
  });
  const children: SpawnedChild[] = [];
  t.after(async () => {
    await Promise.all(children.map((child) => child.kill()));
    await drop();
  });
  await db.query(
    "INSERT INTO race_jobs (id, next_attempt_at) SELECT 'r' || g, $2 FROM generate_series(1, $1) AS g",
    [ROWS, new Date(T0)],
  );
  const owners = ["p1", "p2", "p3", "p4"];
  const ready = { message: (message: unknown) => (message as Message).kind === "ready" };
  await Promise.all(
    owners.map(async (owner) =>
      children.push(
        await spawnChild(CHILD, {
          args: [url, schema, "race_jobs", owner],
          ipc: true,
          ready,
          readyTimeoutMs: CHILD_WAIT_MS,
        }),
      ),
    ),
  );
  let won = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const done = children.map((child) => nextMessage(child, "claimed"));
    const message = { kind: "round", round, nowMs: T0 + (round - 1) * LEASE_MS, complete: round === ROUNDS };
    await Promise.all(children.map((child) => child.sendMessage(message))); // all start together
    const reports = await Promise.all(done);
    won += reports.reduce((sum, r) => sum + r.won, 0);
    const { rows } = await db.query<{ claims: bigint; ids: bigint; owners: bigint; versions: bigint[] }>(
      `SELECT count(*) AS claims, count(DISTINCT id) AS ids, count(DISTINCT owner) AS owners,
              array_agg(DISTINCT lease_version) AS versions FROM race_claims WHERE round = $1`,
      [round],
    );
    assert.equal(rows[0]!.claims, BigInt(ROWS), `round ${round}: no row claimed twice`);
    assert.equal(rows[0]!.ids, BigInt(ROWS), `round ${round}: none missing`);
    assert.ok(rows[0]!.owners >= 2n, `round ${round}: the work was shared between processes`);
    assert.deepEqual(
      rows[0]!.versions,
      [BigInt(round)],
      `round ${round}: every claim bumped the version once`,
    );
    t.diagnostic(`round ${round} claims per process: ${reports.map((r) => r.claimed).join(", ")}`);
  }
  assert.equal(won, ROWS, "every fenced write of the last round won: no lease was taken over");
  const { rows } = await db.query<{ open: bigint }>(
    "SELECT count(*) FILTER (WHERE done_at IS NULL OR lease_owner IS NOT NULL) AS open FROM race_jobs",
  );
  assert.equal(rows[0]!.open, 0n, "every row done and its lease ended");
  await Promise.all(children.map((child) => child.sendMessage("stop")));
});
