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
    line: "The same payment sent 20 times at once with one key: exactly one payment, every answer naming it.",
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
      const byStatus = new Map<number, number>();
      for (const a of answers) byStatus.set(a.status, (byStatus.get(a.status) ?? 0) + 1);
      const ids = new Set(answers.flatMap((a) => (a.id === undefined ? [] : [a.id])));
      const statuses = [...byStatus]
        .sort(([a], [b]) => a - b)
        .map(([status, n]) => `${n} × ${status}`)
        .join(", ");
      const payments = stored === undefined ? 0 : 1;
      const named = ids.size === 1 && stored !== undefined && ids.has(stored.publicId) ? "the same" : "";
      return (
        `${requests} concurrent requests with one Idempotency-Key: ${payments} payment` +
        `${payments === 1 ? "" : "s"} stored; answers ${statuses}; ` +
        `${ids.size} distinct payment id${ids.size === 1 ? "" : "s"} in them${named ? `, ${named} as the store's` : ""}.`
      );
    },
  };
}
