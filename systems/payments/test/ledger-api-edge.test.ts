/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on the ledger API's three write
 * routes — POST /v1/ledger/accounts, /v1/ledger/transfers and /v1/ledger/transfers/batch — on ONE
 * service started by main() as in production (PGlite, the in-process acquirer), authenticated
 * with the demo merchant's bootstrap key. The state probe counts ledger accounts and transactions.
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { type EdgeSubject, edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main, type RunningPayments } from "../src/main.ts";

let keys = 0;
let shared: Promise<{ running: RunningPayments; dir: string; source: string; target: string }> | undefined;

/** One service for the three suites: opened by the first, closed after the file. */
function service() {
  shared ??= (async () => {
    const dir = await mkdtemp(join(tmpdir(), "casebook-ledger-edge-"));
    const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
    const open = async () => {
      const res = await running.service.app.inject({
        method: "POST",
        url: "/v1/ledger/accounts",
        headers: {
          authorization: `Bearer ${running.bootstrap?.apiKey}`,
          "idempotency-key": `edge-open-${++keys}`,
        },
        payload: { currency: "USD" },
      });
      return (res.json() as { id: string }).id;
    };
    return { running, dir, source: await open(), target: await open() };
  })();
  return shared;
}

after(async () => {
  if (shared === undefined) return;
  const { running, dir } = await shared;
  await running.close();
  await rm(dir, { recursive: true, force: true });
});

async function subject(): Promise<{ subject: EdgeSubject; close: () => Promise<void> }> {
  const { running } = await service();
  return {
    subject: {
      service: running.service,
      writeHeaders: () => ({ "idempotency-key": `edge-${++keys}` }),
      stateProbe: async () => {
        const { rows } = await running.db.query(
          `SELECT (SELECT count(*)::int FROM ledger_api_accounts) AS accounts,
                  (SELECT count(*)::int FROM transactions) AS transactions`,
        );
        return rows[0];
      },
    },
    close: async () => {},
  };
}

const auth = {
  header: "authorization",
  valid: () => `Bearer ${keysOf()}`,
  wrong: "Bearer sk_0_not_a_real_key",
};
let apiKey = "";
const keysOf = () => apiKey;
const opened = async () => {
  const s = await subject();
  apiKey = (await service()).running.bootstrap?.apiKey ?? "";
  return s;
};
/** The amount lists what is wrong for a field taking an integer or a decimal string. */
const amountWrong = [true, 12.5, [1250], { minor: 1250 }, null];

edgeContractSuite({
  name: "ledger accounts",
  open: opened,
  write: {
    method: "POST",
    url: "/v1/ledger/accounts",
    body: { currency: "USD", noOverdraft: true, metadata: { a: "b" } },
  },
  fields: { "/currency": "string", "/noOverdraft": "boolean", "/metadata": "object" },
  stringField: "/metadata/a",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth,
});

// The transfer bodies name the two accounts opened with the service: filled in by `open`, before
// any case sends them (the suite reads `write.body` when it sends).
const transferWrite = {
  debitAccountId: "",
  creditAccountId: "",
  amountMinor: 5,
  currency: "USD",
  metadata: { note: "x" },
};
const batchItem = { ...transferWrite, idempotencyKey: "edge-batch-1", linked: false };
const openWithAccounts = async () => {
  const s = await opened();
  const { source, target } = await service();
  for (const body of [transferWrite, batchItem])
    Object.assign(body, { debitAccountId: source, creditAccountId: target });
  return s;
};

edgeContractSuite({
  name: "ledger transfers",
  open: openWithAccounts,
  write: { method: "POST", url: "/v1/ledger/transfers", body: transferWrite },
  fields: {
    "/debitAccountId": "string",
    "/creditAccountId": "string",
    "/amountMinor": amountWrong,
    "/currency": "string",
    "/metadata": "object",
  },
  stringField: "/metadata/note",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth,
});

edgeContractSuite({
  name: "ledger transfer batch",
  open: openWithAccounts,
  write: { method: "POST", url: "/v1/ledger/transfers/batch", body: { transfers: [batchItem] } },
  fields: {
    "/transfers": "array",
    "/transfers/0/idempotencyKey": "string",
    "/transfers/0/debitAccountId": "string",
    "/transfers/0/amountMinor": amountWrong,
    "/transfers/0/linked": "boolean",
  },
  stringField: "/transfers/0/idempotencyKey",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth,
});
