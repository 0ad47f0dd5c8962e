import { openBenchLedger, runLedgerLoad } from "./ledger-load.ts";
const url = "postgres://postgres@127.0.0.1:5432/test";
const ledger = await openBenchLedger(url, { accounts: 1000, log: () => {} });
const run = await runLedgerLoad(ledger, { shape: "single", clients: 8, durationMs: 5000, warmupMs: 500, batchSize: 100, log: () => {} });
console.log(run.transfersPerS.toFixed(0), "transfers/s", run.clientCpuUsPerTransfer.toFixed(0), "µs CPU/transfer");
await ledger.drop();
