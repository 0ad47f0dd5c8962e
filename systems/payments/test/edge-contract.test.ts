/**
 * The edge contract (packages/lab/src/edge-contract-suite.ts) on POST /v1/payments, started by
 * main() as in production on PGlite with the in-process acquirer, authenticated with the demo
 * merchant's bootstrap key. The state probe reads the merchant's accounts through the API and
 * counts the rows a payment writes (payments, ledger transactions, idempotency keys, outbox).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultBodyLimitBytes } from "@casebook/infra/http/service";
import { edgeContractSuite } from "@casebook/lab/edge-contract-suite";
import { main } from "../src/main.ts";

let apiKey = "";
let idempotencyKeys = 0;

edgeContractSuite({
  name: "payments",
  open: async () => {
    const dir = await mkdtemp(join(tmpdir(), "casebook-payments-edge-"));
    // No DATABASE_URL / ACQUIRER_URL from the outer environment: the embedded defaults.
    const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
    apiKey = running.bootstrap?.apiKey ?? "";
    const service = running.service;
    return {
      subject: {
        service,
        writeHeaders: () => ({ "idempotency-key": `edge-${++idempotencyKeys}` }),
        stateProbe: async () => {
          const accounts = await service.app.inject({
            url: "/v1/accounts",
            headers: { authorization: `Bearer ${apiKey}` },
          });
          const { rows } = await running.db.query(
            `SELECT (SELECT count(*)::int FROM payments) AS payments,
                    (SELECT count(*)::int FROM transactions) AS transactions,
                    (SELECT count(*)::int FROM idempotency_keys) AS idempotency_keys,
                    (SELECT count(*)::int FROM outbox_events) AS outbox_events`,
          );
          return { accounts: accounts.json(), rows: rows[0] };
        },
      },
      close: async () => {
        await running.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  write: {
    method: "POST",
    url: "/v1/payments",
    body: { amountMinor: 1250, currency: "USD", cardToken: "tok_visa", capture: true },
  },
  fields: {
    // An amount is an integer or a decimal string (amounts may exceed 2^53): anything else is wrong.
    "/amountMinor": [true, 12.5, [1250], { minor: 1250 }, null],
    "/currency": "string",
    "/cardToken": "string",
    "/capture": "boolean",
  },
  stringField: "/cardToken",
  bodyLimitBytes: defaultBodyLimitBytes,
  wrongMethod: { method: "GET", allow: "POST" },
  auth: { header: "authorization", valid: () => `Bearer ${apiKey}`, wrong: "Bearer sk_0_not_a_real_key" },
});
