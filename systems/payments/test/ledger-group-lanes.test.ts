/**
 * The group commit's lane choice (issue 14's CPU work), on PGlite and PostgreSQL: transfers that
 * arrive together fill ONE group even with two lanes — kit's old fewest-waiting rule dealt them
 * out one by one, and every extra group costs a statement, a round trip and a commit. The rule
 * lives in kit's GroupCommitLanes now (its own tests there); this checks the ledger still gets it.
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { LedgerRepository } from "../src/store/ledger-repository.ts";
import { type LedgerSubject, ledgerBackends } from "./ledger-backends.ts";

contractSuite<LedgerSubject>("ledger group commit lanes", ledgerBackends, (it) => {
  it("group commit: transfers submitted together with two lanes fill one group, one database transaction", async (s) => {
    const ledger = new LedgerRepository(s.db, { groupCommit: { maxWaitMs: 50, lanes: 2 } });
    const a = await ledger.createAccount({ currency: "USD" });
    const b = await ledger.createAccount({ currency: "USD" });
    const keys = Array.from({ length: 12 }, (_, i) => s.key(`lane-${i}`));
    const results = await Promise.all(
      keys.map((idemKey) => ledger.transfer({ idemKey, from: a.id, to: b.id, amount: 1n, currency: "USD" })),
    );
    assert.equal(results.length, 12);
    assert.deepEqual(ledger.groupCommitStats, { batches: 1, items: 12, refused: 0 });
    const { rows } = await s.db.query<{ xids: bigint }>(
      "SELECT count(DISTINCT created_xid)::int8 AS xids FROM transactions WHERE idem_key = ANY($1::text[])",
      [keys],
    );
    assert.equal(rows[0]!.xids, 1n);
    assert.equal((await ledger.balance(b.id)).posted, 12n);
    await ledger.drain();
  });
});
