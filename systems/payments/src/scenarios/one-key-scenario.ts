/**
 * The console's payments scenario (PY-01 shown live): 20 concurrent `POST /v1/payments` over
 * this service's own HTTP API, all with one Idempotency-Key, from a merchant made for the run
 * (its data touches no one else's). Each answer is a point (its arrival order, its time in ms,
 * by status); the result sentence counts the answers and the payments they name, checked
 * against the store's one payment for the key.
 *
 * @example
 * new ScenarioRuns([oneKeyScenario({ db, merchants, baseUrl: () => url })]);
 */
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import type { Database } from "@casebook/infra/sql/sql";
import type { MerchantRepository } from "../store/merchant-repository.ts";
import { findPaymentByKey } from "../store/payment-repository.ts";

export interface OneKeyScenarioDeps {
  db: Database;
  merchants: MerchantRepository;
  /** This service's own address, known once it listens. */
  baseUrl(): string;
  /** Requests sent at once; 20 as the text says. */
  requests?: number;
}

export function oneKeyScenario(deps: OneKeyScenarioDeps): Scenario {
  const requests = deps.requests ?? 20;
  return {
    id: "one-key-twenty-requests",
    title: `${requests} concurrent requests with one Idempotency-Key`,
    line: 'The same payment sent 20 times at once with one key: exactly one payment; each answer is that payment or "in progress" (409).',
    xLabel: "answer, in arrival order",
    yLabel: "ms",
    run: async (ctx) => {
      const created = await deps.merchants.create({ name: "scenario: one key, twenty requests" });
      const key = `scenario-${Date.now().toString(36)}`;
      const body = JSON.stringify({ amountMinor: "1234", currency: "BRL", cardToken: "tok_visa_4242" });
      const started = performance.now();
      let answered = 0;
      const send = async () => {
        const res = await fetch(`${deps.baseUrl()}/v1/payments`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${created.apiKey.key}`,
            "content-type": "application/json",
            "idempotency-key": key,
          },
          body,
          signal: ctx.signal,
        });
        const answer = (await res.json()) as { id?: string };
        answered += 1;
        ctx.point(String(res.status), answered, Math.round(performance.now() - started));
        ctx.progress(answered / requests);
        return { status: res.status, id: answer.id };
      };
      const answers = await Promise.all(Array.from({ length: requests }, send));
      const stored = await findPaymentByKey(deps.db, created.merchant.id, key);
      const storedId = stored?.publicId;
      const withIt = answers.filter((a) => a.status >= 200 && a.status < 300 && a.id === storedId);
      const inProgress = answers.filter((a) => a.status === 409);
      const other = requests - withIt.length - inProgress.length;
      const statuses = [...new Set(withIt.map((a) => a.status))].sort().join("/") || "2xx";
      const payments = stored === undefined ? "no payment" : "1 payment";
      return (
        `${requests} concurrent requests with one Idempotency-Key: ${payments} stored; ` +
        `${withIt.length} answers carry its id (${statuses}), ${inProgress.length} say "in progress" (409), ` +
        `${other} other.`
      );
    },
  };
}
