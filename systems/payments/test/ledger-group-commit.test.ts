/**
 * Group commit (issue 14) on PGlite and PostgreSQL: a group's outcomes are exactly those of
 * applying its transfers one by one in arrival order — a property against a serial model
 * written independently of the implementation, no-overdraft accounts, unknown accounts,
 * currency mismatches, repeated keys (other timeouts too) and linked chains included — and the mechanics around it:
 * one database transaction per group, TigerBeetle's `exists…` answers, the bounded queue's 503,
 * and split-and-retry so a transfer the database refuses fails alone.
 */
import assert from "node:assert/strict";
import { kitErrors } from "@casebook/kit/kit-errors";
import { contractSuite } from "@casebook/lab/contract-suite";
import fc from "fast-check";
import { normalizeTransfer, type TransferRequest } from "../src/domain/ledger.ts";
import { ledgerErrors } from "../src/errors.ts";
import { atOnceIsSerial } from "../src/store/ledger-group-write.ts";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";
import { checkLedgerInvariants } from "./ledger-invariants.ts";

/** Accounts of one run: 0 USD may go negative; 1, 2 USD no-overdraft; 3 EUR no-overdraft; 4 does not exist. */
const ACCOUNTS = 5;
const FUNDED_MINOR = 100;

interface Op {
  key: number;
  from: number;
  to: number;
  amount: number;
  currency: "USD" | "EUR";
  pending: boolean;
  /** A pending op with a timeout (60 s: none expires during the run). */
  timed: boolean;
  tagged: boolean;
  linked: boolean;
  /** A retry: the same request as the op before it (its own `linked` kept). */
  retry: boolean;
  /** A retry that flips the timeout of the request it repeats (matters for a pending one). */
  retimed: boolean;
}

const opArb: fc.Arbitrary<Op> = fc.record({
  key: fc.integer({ min: 0, max: 7 }),
  from: fc.integer({ min: 0, max: ACCOUNTS - 1 }),
  to: fc.integer({ min: 0, max: ACCOUNTS - 1 }),
  amount: fc.integer({ min: 1, max: 150 }),
  currency: fc.constantFrom("USD" as const, "EUR" as const),
  pending: fc.boolean(),
  timed: fc.boolean(),
  tagged: fc.boolean(),
  linked: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  retry: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
  retimed: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
});

/** Retries copy their predecessor (a `retimed` one flips its timeout); from = to is moved to the next account (the shorthand refuses it). */
function shaped(ops: readonly Op[]): Op[] {
  const out: Op[] = [];
  for (const op of ops) {
    const previous = out.at(-1);
    const base =
      op.retry && previous !== undefined
        ? {
            ...previous,
            linked: op.linked,
            retry: true,
            timed: op.retimed ? !previous.timed : previous.timed,
          }
        : op;
    out.push({ ...base, to: base.from === base.to ? (base.to + 1) % ACCOUNTS : base.to });
  }
  return out;
}

interface ModelAccount {
  currency: string;
  noOverdraft: boolean;
  posted: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
}

type ModelResult = { code: string; accountIds?: string[]; accountId?: string };

/**
 * The obvious serial ledger: each transfer applied alone, in order, against the state the
 * previous ones left; a linked chain applied on a copy kept only if every member succeeds.
 */
class SerialModel {
  accounts = new Map<number, ModelAccount>();
  keys = new Map<number, Op>();

  applyAll(ops: readonly Op[]): ModelResult[] {
    const results: ModelResult[] = [];
    let i = 0;
    while (i < ops.length) {
      let end = i;
      while (end < ops.length - 1 && ops[end]!.linked) end++;
      const chain = ops.slice(i, end + 1);
      if (chain.at(-1)!.linked) {
        results.push(
          ...chain.map((_, k) => ({
            code: k === chain.length - 1 ? "linked_event_chain_open" : "linked_event_failed",
          })),
        );
        break;
      }
      const saved = { accounts: this.#copy(), keys: new Map(this.keys) };
      const chainResults = chain.map((op) => this.#applyOne(op));
      const failed = chainResults.findIndex((r) => r.code !== "ok" && r.code !== "exists");
      if (chain.length > 1 && failed >= 0) {
        this.accounts = saved.accounts;
        this.keys = saved.keys;
        results.push(...chainResults.map((r, k) => (k === failed ? r : { code: "linked_event_failed" })));
      } else results.push(...chainResults);
      i = end + 1;
    }
    return results;
  }

  #copy(): Map<number, ModelAccount> {
    return new Map([...this.accounts].map(([k, v]) => [k, { ...v }]));
  }

  #applyOne(op: Op): ModelResult {
    const first = this.keys.get(op.key);
    if (first !== undefined) {
      if (
        first.from !== op.from ||
        first.to !== op.to ||
        first.amount !== op.amount ||
        first.currency !== op.currency
      )
        return { code: "exists_with_different_entries" };
      if (first.tagged !== op.tagged) return { code: "exists_with_different_metadata" };
      if (timeoutOf(first) !== timeoutOf(op)) return { code: "exists_with_different_timeout" };
      if (first.pending !== op.pending) return { code: "exists_with_different_flags" };
      return { code: "exists" };
    }
    for (const side of [op.from, op.to]) {
      const account = this.accounts.get(side);
      if (account === undefined) return { code: "account_not_found", accountId: String(side) };
      if (account.currency !== op.currency) return { code: "currency_mismatch", accountId: String(side) };
    }
    const from = this.accounts.get(op.from)!;
    const to = this.accounts.get(op.to)!;
    const amount = BigInt(op.amount);
    if (from.noOverdraft && from.posted - from.pendingDebits - amount < 0n)
      return { code: "exceeds_credits", accountIds: [String(op.from)] };
    if (op.pending) {
      from.pendingDebits += amount;
      to.pendingCredits += amount;
    } else {
      from.posted -= amount;
      to.posted += amount;
    }
    this.keys.set(op.key, op);
    return { code: "ok" };
  }
}

function timeoutOf(op: Op): number | undefined {
  return op.pending && op.timed ? 60 : undefined;
}

function requestOf(op: Op, ids: readonly bigint[], keys: readonly string[]): TransferRequest {
  return {
    idemKey: keys[op.key]!,
    from: ids[op.from]!,
    to: ids[op.to]!,
    amount: BigInt(op.amount),
    currency: op.currency,
    pending: op.pending,
    timeoutS: timeoutOf(op),
    ...(op.tagged ? { metadata: { tag: "t" } } : {}),
  };
}

async function openRun(s: LedgerSubject, model: SerialModel): Promise<bigint[]> {
  const ids: bigint[] = [];
  const kinds = [
    { currency: "USD", noOverdraft: false },
    { currency: "USD", noOverdraft: true },
    { currency: "USD", noOverdraft: true },
    { currency: "EUR", noOverdraft: true },
  ];
  for (const [i, kind] of kinds.entries()) {
    ids.push((await s.ledger.createAccount(kind)).id);
    model.accounts.set(i, { ...kind, posted: 0n, pendingDebits: 0n, pendingCredits: 0n });
  }
  const eurSource = (await s.ledger.createAccount({ currency: "EUR" })).id;
  ids.push(ids.at(-1)! + 1_000_000n); // never created: account 4
  for (const [i, currency, source] of [
    [1, "USD", ids[0]!],
    [2, "USD", ids[0]!],
    [3, "EUR", eurSource],
  ] as const) {
    const amount = BigInt(FUNDED_MINOR);
    await s.ledger.transfer({ idemKey: s.key("fund"), from: source, to: ids[i]!, amount, currency });
    model.accounts.get(i)!.posted += amount;
    if (i !== 3) model.accounts.get(0)!.posted -= amount;
  }
  return ids;
}

function summary(
  outcome: { code: string; accountIds?: bigint[]; accountId?: bigint },
  ids: bigint[],
): ModelResult {
  const index = (id: bigint) => String(ids.indexOf(id) === -1 ? "?" : ids.indexOf(id));
  if (outcome.code === "exceeds_credits")
    return { code: outcome.code, accountIds: outcome.accountIds!.map(index) };
  if (outcome.code === "account_not_found" || outcome.code === "currency_mismatch")
    return { code: outcome.code, accountId: index(outcome.accountId!) };
  return { code: outcome.code };
}

contractSuite<LedgerSubject>("ledger group commit", ledgerBackends, (it) => {
  it("group commit: a group's outcomes equal applying its transfers one by one in arrival order (model)", async (s) => {
    const groups = fc.array(fc.array(opArb, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 2 });
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(groups, async (batches) => {
        const model = new SerialModel();
        const ids = await openRun(s, model);
        const keys = Array.from({ length: 8 }, (_, k) => s.key(`g${k}`));
        for (const raw of batches) {
          const ops = shaped(raw);
          const items = ops.map((op) => ({ request: requestOf(op, ids, keys), linked: op.linked }));
          const outcomes = await s.ledger.createTransfers(items);
          for (const outcome of outcomes) seen.add(outcome.code);
          assert.deepEqual(
            outcomes.map((o) => summary(o, ids)),
            model.applyAll(ops),
          );
        }
        for (const [i, account] of model.accounts) {
          const balance = await s.ledger.balance(ids[i]!);
          assert.equal(balance.posted, account.posted, `account ${i} posted`);
          assert.equal(balance.pendingDebits, account.pendingDebits, `account ${i} pending debits`);
          assert.equal(balance.pendingCredits, account.pendingCredits, `account ${i} pending credits`);
        }
      }),
      { seed: 20_261_202, numRuns: 40 },
    );
    // The runs met every fate the model knows, so the equality above was tested on each.
    const fates = [
      "ok",
      "exists",
      "exists_with_different_entries",
      "exists_with_different_timeout",
      "account_not_found",
    ];
    for (const code of [
      ...fates,
      "currency_mismatch",
      "exceeds_credits",
      "linked_event_failed",
      "linked_event_chain_open",
    ])
      assert.ok(seen.has(code), `no run produced ${code}`);
    await checkLedgerInvariants(s.db);
  });

  it("group commit: groups written at once (one ledger_write call) equal the serial model too", async (s) => {
    // No chains, timeouts or retries, each key once per group (a key comes back in a later group):
    // the shapes `atOnceIsSerial` lets through, and the ones it turns back for being non-monotone.
    const plain = opArb.map((op) => ({ ...op, linked: false, timed: false, retry: false }));
    const groups = fc.array(fc.array(plain, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 3 });
    let atOnce = 0;
    await fc.assert(
      fc.asyncProperty(groups, async (batches) => {
        const model = new SerialModel();
        const ids = await openRun(s, model);
        const keys = Array.from({ length: 4 }, (_, k) => s.key(`o${k}`));
        for (const raw of batches) {
          const ops = shaped(raw).map((op, k) => ({ ...op, key: k }));
          const items = ops.map((op) => ({ request: requestOf(op, ids, keys) }));
          if (atOnceIsSerial(items.map((item) => ({ transfer: normalizeTransfer(item.request) })))) atOnce++;
          const outcomes = await s.ledger.createTransfers(items);
          assert.deepEqual(
            outcomes.map((o) => summary(o, ids)),
            model.applyAll(ops),
          );
        }
      }),
      { seed: 20_261_203, numRuns: 25 },
    );
    assert.ok(atOnce >= 20, `only ${atOnce} groups could go at once`);
    // The case the monotone rule exists for: at once, 100 − 120 + 50 ≥ 0 would pass; one by one
    // the first debit is refused before the credit that would have covered it arrives.
    const model = new SerialModel();
    const ids = await openRun(s, model);
    const keys = [s.key("m0"), s.key("m1")];
    const base = { pending: false, timed: false, tagged: false, linked: false, retry: false, retimed: false };
    const ops: Op[] = [
      { ...base, key: 0, from: 1, to: 0, amount: 120, currency: "USD" },
      { ...base, key: 1, from: 0, to: 1, amount: 50, currency: "USD" },
    ];
    const outcomes = await s.ledger.createTransfers(ops.map((op) => ({ request: requestOf(op, ids, keys) })));
    assert.deepEqual(
      outcomes.map((o) => o.code),
      ["exceeds_credits", "ok"],
    );
    assert.deepEqual(
      outcomes.map((o) => summary(o, ids)),
      model.applyAll(ops),
    );
    await checkLedgerInvariants(s.db);
  });

  it("group commit: concurrent single transfers are ONE database transaction, each with its own outcome", async (s) => {
    const ledger = new LedgerRepository(s.db, { groupCommit: { maxWaitMs: 200, lanes: 1 } });
    const world = await ledger.createAccount({ currency: "USD" });
    const wallet = await ledger.createAccount({ currency: "USD", noOverdraft: true });
    const requests = Array.from({ length: 20 }, (_, i) => ({
      idemKey: s.key("one"),
      // The wallet starts empty: each even transfer brings 10, the next spends them, every other
      // spender asks 1 000 — more than the wallet ever holds.
      ...(i % 2 === 0 ? { from: world.id, to: wallet.id } : { from: wallet.id, to: world.id }),
      amount: i % 4 === 3 ? 1_000n : 10n,
      currency: "USD",
    }));
    const settled = await Promise.allSettled(requests.map((r) => ledger.transfer(r)));
    // Submitted in one tick, so one group: one write, one database transaction.
    assert.deepEqual(ledger.groupCommitStats, { batches: 1, items: 20, refused: 0 });
    const refused = settled.flatMap((r, i) => (r.status === "rejected" ? [i] : []));
    assert.deepEqual(refused, [3, 7, 11, 15, 19], "each 1 000 is refused alone; the others pass");
    for (const i of refused) {
      const reason = (settled[i] as PromiseRejectedResult).reason;
      assert.ok(ledgerErrors.is(reason, "LEDGER_INSUFFICIENT_FUNDS"), String(reason));
    }
    const { rows } = await s.db.query<{ xids: bigint }>(
      "SELECT count(DISTINCT created_xid)::int8 AS xids FROM transactions WHERE idem_key = ANY($1::text[])",
      [requests.map((r) => r.idemKey)],
    );
    assert.equal(rows[0]!.xids, 1n, "the 15 written transfers share one database transaction");
    assert.equal((await ledger.balance(wallet.id)).posted, 50n);
  });

  it("group commit: a retry is `exists` with the original; other fields are exists_with_different_…", async (s) => {
    const world = await s.ledger.createAccount({ currency: "USD" });
    const other = await s.ledger.createAccount({ currency: "USD" });
    const request = { idemKey: s.key("idem"), from: world.id, to: other.id, amount: 5n, currency: "USD" };
    const first = await s.ledger.transfer(request);
    const outcomes = await s.ledger.createTransfers([
      { request },
      { request: { ...request, amount: 6n } },
      { request: { ...request, metadata: { note: "x" } } },
      { request: { ...request, pending: true } },
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.code),
      [
        "exists",
        "exists_with_different_entries",
        "exists_with_different_metadata",
        "exists_with_different_flags",
      ],
    );
    const transactionOf = (o: (typeof outcomes)[number]) => ("transaction" in o ? o.transaction : undefined);
    for (const outcome of outcomes) assert.equal(transactionOf(outcome)?.id, first.transaction.id);
    assert.deepEqual(transactionOf(outcomes[0]!), first.transaction);
    const lie = await s.ledger.transfer({ ...request, amount: 6n }).catch((error: unknown) => error);
    assert.ok(ledgerErrors.is(lie, "LEDGER_IDEMPOTENCY_CONFLICT"));
    assert.equal(lie.fields.result, "exists_with_different_entries");
    assert.equal((await s.ledger.balance(other.id)).posted, 5n, "applied once");
  });

  it("group commit: a full queue is refused at once with GROUP_COMMIT_QUEUE_FULL (503), never a wait", async (s) => {
    const ledger = new LedgerRepository(s.db, { groupCommit: { maxPending: 2, maxWaitMs: 500, lanes: 1 } });
    const a = await ledger.createAccount({ currency: "USD" });
    const b = await ledger.createAccount({ currency: "USD" });
    const settled = await Promise.allSettled(
      Array.from({ length: 5 }, () =>
        ledger.transfer({ idemKey: s.key("q"), from: a.id, to: b.id, amount: 1n, currency: "USD" }),
      ),
    );
    assert.deepEqual(
      settled.map((r) => r.status),
      ["fulfilled", "fulfilled", "rejected", "rejected", "rejected"],
    );
    const reason = (settled[2] as PromiseRejectedResult).reason;
    assert.ok(kitErrors.is(reason, "GROUP_COMMIT_QUEUE_FULL"));
    assert.equal(reason.status, 503);
    assert.equal(reason.fields.limit, 2);
    assert.equal((await ledger.balance(b.id)).posted, 2n);
  });

  it("group commit: a transfer the database refuses at write fails alone; the group is split and the rest commit", async (s) => {
    // A refusal the decisions cannot foresee: a trigger of this test's own, on one metadata tag.
    await s.db.exec(`
      CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.metadata ? 'poison' THEN RAISE EXCEPTION 'poisoned transfer' USING ERRCODE = 'check_violation'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER test_poison BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION test_poison();`);
    try {
      const ledger = new LedgerRepository(s.db, { groupCommit: { maxWaitMs: 200, lanes: 1 } });
      const a = await ledger.createAccount({ currency: "USD" });
      const b = await ledger.createAccount({ currency: "USD" });
      const settled = await Promise.allSettled(
        Array.from({ length: 7 }, (_, i) =>
          ledger.transfer({
            idemKey: s.key("split"),
            from: a.id,
            to: b.id,
            amount: 1n,
            currency: "USD",
            metadata: i === 4 ? { poison: true } : {},
          }),
        ),
      );
      assert.deepEqual(
        settled.map((r) => r.status),
        ["fulfilled", "fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled", "fulfilled"],
      );
      assert.match(String((settled[4] as PromiseRejectedResult).reason), /poisoned transfer/);
      assert.equal((await ledger.balance(b.id)).posted, 6n);
      assert.equal(ledger.groupCommitStats?.batches, 1, "one group, split inside its write");
    } finally {
      await s.db.exec("DROP TRIGGER test_poison ON transactions; DROP FUNCTION test_poison();");
    }
    await checkLedgerInvariants(s.db);
  });
});
