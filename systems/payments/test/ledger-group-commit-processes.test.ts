/**
 * Group commit under several OS processes and a crash (issue 14's proof), on real PostgreSQL:
 * 4 processes hammer one hot account and 1 000 random accounts through group commit; one is
 * SIGKILLed while its groups are in flight. Its unacknowledged transfers are then retried with
 * their idem_keys, as a client would. Afterwards: every ledger transaction balances, every
 * balance equals the sum of its entries, every acknowledged transfer exists exactly once (with
 * the id it was acknowledged with), and no transfer exists twice — one transaction per key sent,
 * none more.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { spawnChild } from "@casebook/lab/spawn-child";
import { requirePostgres } from "@casebook/lab/test-engines";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { openPostgresLedger } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";
import type { TestSchema } from "./sql-backends.ts";

const PROCESSES = 4;
const RANDOM_ACCOUNTS = 1_000;
const TRANSFERS_PER_PROCESS = 1_200;
const LOOPS_PER_PROCESS = 16;
/** The victim is killed once it has this many acknowledgements: well inside its run. */
const KILL_AFTER_ACKS = 150;
const child = new URL("./ledger-hammer-child.ts", import.meta.url);

interface Sent {
  idemKey: string;
  from: string;
  to: string;
  amount: string;
}

describe("ledger group commit across processes [postgresql]", () => {
  let url: string | undefined;
  let subject: TestSchema | undefined;

  before(async () => {
    url = await requirePostgres({ skip: () => {} });
    if (url) subject = await openPostgresLedger(url, 4);
  });
  after(async () => {
    await subject?.drop();
  });

  test("4 processes, one hot account, 1 000 random accounts, one SIGKILLed mid-group: exact and exactly once", async (t) => {
    if (!(await requirePostgres(t)) || !subject) return;
    const { rows } = await subject.db.query<{ id: bigint }>(
      `WITH a AS (INSERT INTO accounts (currency) SELECT 'USD' FROM generate_series(0, $1::int4) RETURNING id),
            b AS (INSERT INTO account_balances (account_id, no_overdraft) SELECT id, false FROM a)
       SELECT id FROM a ORDER BY id`,
      [RANDOM_ACCOUNTS],
    );
    const [hot, ...random] = rows.map((r) => r.id);
    const sent = new Map<string, Sent>();
    const acked = new Map<string, bigint>();
    const children = [];
    for (let worker = 0; worker < PROCESSES; worker++) {
      const args = [
        url!,
        subject.schema,
        String(worker),
        String(hot),
        String(random[0]),
        String(random.at(-1)),
      ];
      const spawned = await spawnChild(child, {
        args: [...args, String(TRANSFERS_PER_PROCESS), String(LOOPS_PER_PROCESS)],
        ready: "ready",
        readyTimeoutMs: 60_000,
        test: t,
        queueLines: true,
        onLine: (line) => {
          if (line.startsWith("send ")) {
            const request = JSON.parse(line.slice(5)) as Sent;
            sent.set(request.idemKey, request);
          } else if (line.startsWith("ack ")) {
            const [, key, id] = line.split(" ");
            acked.set(key!, BigInt(id!));
          }
        },
      });
      children.push(spawned);
    }
    for (const spawned of children) spawned.send("go");
    const victimAcks = () => [...acked.keys()].filter((key) => key.startsWith("w0-")).length;
    const deadline = Date.now() + 240_000;
    while (victimAcks() < KILL_AFTER_ACKS && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    assert.ok(victimAcks() >= KILL_AFTER_ACKS, "the victim made progress before the kill");
    await children[0]!.kill("SIGKILL");
    const inFlight = [...sent.keys()].filter((key) => key.startsWith("w0-") && !acked.has(key));
    assert.ok(inFlight.length > 0, "killed with transfers in flight (sent, not acknowledged)");
    for (const survivor of children.slice(1)) {
      const exit = await survivor.exited;
      assert.equal(exit.code, 0, survivor.stderr());
    }

    // The client of the killed process retries what it never heard back about, same keys.
    const ledger = new LedgerRepository(subject.db);
    let replayed = 0;
    for (const key of inFlight) {
      const r = sent.get(key)!;
      const result = await ledger.transfer({
        idemKey: key,
        from: BigInt(r.from),
        to: BigInt(r.to),
        amount: BigInt(r.amount),
        currency: "USD",
      });
      if (result.replayed) replayed += 1;
      acked.set(key, result.transaction.id);
    }
    t.diagnostic(
      `${sent.size} sent, ${inFlight.length} in flight at the kill, ${replayed} of them had committed`,
    );

    await checkLedgerInvariants(subject.db);
    const stored = await subject.db.query<{ idem_key: string; id: bigint; amount: bigint; n: bigint }>(
      `SELECT t.idem_key, t.id, max(e.amount) AS amount, count(e.id)::int8 AS n
         FROM transactions t JOIN entries e ON e.transaction_id = t.id GROUP BY t.id`,
    );
    const byKey = new Map(stored.rows.map((row) => [row.idem_key, row]));
    assert.equal(stored.rows.length, byKey.size, "no key twice");
    assert.deepEqual(
      [...byKey.keys()].sort(),
      [...sent.keys()].sort(),
      "one transaction per key sent, none more",
    );
    for (const [key, id] of acked) {
      const row = byKey.get(key)!;
      assert.equal(row.id, id, `${key} exists with the id it was acknowledged with`);
      assert.equal(row.n, 2n);
      assert.equal(row.amount, BigInt(sent.get(key)!.amount));
    }
  });
});
