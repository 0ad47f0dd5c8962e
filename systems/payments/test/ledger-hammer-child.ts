/**
 * One OS process hammering the ledger through group commit, for ledger-group-commit-processes:
 * `loops` concurrent callers, each transfer either out of the hot account or between two of the
 * random accounts. Before a transfer goes out it prints `send <json request>`; once answered,
 * `ack <key> <transaction id>` — so the test knows what was acknowledged and what was in flight
 * when it SIGKILLs this process. Prints `ready`, starts on a `go` line; stops after `count` transfers (`done`).
 *
 * @example
 * // node ledger-hammer-child.ts <url> <schema> <worker> <hotId> <firstId> <lastId> <count> <loops>
 */
import { openDatabase } from "@casebook/infra/sql/open-database";
import { LedgerRepository } from "../src/store/ledger-repository.ts";

const [url, schema, worker, hot, first, last, count, loops] = process.argv.slice(2);
const hotId = BigInt(hot!);
const firstId = BigInt(first!);
const span = Number(BigInt(last!) - firstId) + 1;
const total = Number(count);
const db = await openDatabase({
  system: "payments",
  url: url!,
  schema: schema!,
  pool: { maxConnections: 2 },
});
const ledger = new LedgerRepository(db, { groupCommit: { maxWaitMs: 2, maxBatch: 200 } });

let sequence = 0;
function pick(): bigint {
  return firstId + BigInt(Math.floor(Math.random() * span));
}

async function loop(): Promise<void> {
  while (sequence < total) {
    sequence += 1;
    const idemKey = `w${worker}-${sequence}`;
    const from = sequence % 2 === 0 ? hotId : pick();
    let to = pick();
    while (to === from) to = pick();
    const amount = BigInt(1 + Math.floor(Math.random() * 1_000));
    const request = { idemKey, from: from.toString(), to: to.toString(), amount: amount.toString() };
    process.stdout.write(`send ${JSON.stringify(request)}\n`);
    const { transaction } = await ledger.transfer({ idemKey, from, to, amount, currency: "USD" });
    process.stdout.write(`ack ${idemKey} ${transaction.id}\n`);
  }
}

console.log("ready");
// Every process starts at the same moment: the test writes `go` once all are ready.
await new Promise<void>((resolve) => {
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (chunk: string) => {
    if (chunk.includes("go")) resolve();
  });
});
process.stdin.destroy(); // an open stdin would keep this process alive after `done`
await Promise.all(Array.from({ length: Number(loops) }, loop));
await ledger.drain();
await db.close();
console.log("done");
