/**
 * The simulator's control panel, outside the fault hooks (an outage never locks the
 * test out): the failure knobs, a reset, the counters a test reads to prove "one
 * charge", and the differences injected into a day's settlement file (PY-10) with
 * the list of exactly what was injected.
 *
 * @example
 * await fetch(`${url}/admin/behaviour`, { method: "PUT", body: JSON.stringify({ outage: true }), headers });
 */
import type { FastifyInstance } from "fastify";
import type { Behaviour } from "./acquirer-behaviour.ts";
import { acquirerErrors } from "./acquirer-errors.ts";
import { type AcquirerRouteDeps, closedDayRows } from "./acquirer-routes.ts";
import { behaviourSchema, dateParams, differencesBody } from "./acquirer-schemas.ts";
import { chooseDifferences, type DifferenceRequest, type InjectedDifference } from "./settlement-file.ts";

const tags = ["admin"];

function differenceJson(difference: InjectedDifference) {
  const { row } = difference;
  return {
    kind: difference.kind,
    idempotencyKey: row.idempotencyKey,
    authorizationId: row.authorizationId,
    operation: row.operation,
    amountMinor: String(row.amountMinor),
    ...(difference.kind === "amount-changed"
      ? { originalAmountMinor: String(difference.originalAmountMinor) }
      : {}),
    currency: row.currency,
    settledAt: new Date(row.settledAtMs).toISOString(),
  };
}

function registerKnobs(app: FastifyInstance, { state, faults }: AcquirerRouteDeps): void {
  app.get(
    "/admin/behaviour",
    { schema: { summary: "The failure knobs in force", tags } },
    async () => faults.behaviour,
  );
  app.put<{ Body: Partial<Behaviour> }>(
    "/admin/behaviour",
    {
      schema: {
        summary: "Change some failure knobs; the others keep their value",
        tags,
        body: behaviourSchema,
      },
    },
    async (request) => faults.update(request.body),
  );
  app.post(
    "/admin/reset",
    {
      schema: {
        summary: "Forget every payment, counter and injected difference; knobs back to the start",
        tags,
      },
    },
    async () => {
      state.reset();
      faults.reset();
      return { reset: true };
    },
  );
  const stats = async () => ({ ...state.stats(), faults: faults.counters() });
  app.get("/admin/stats", { schema: { summary: "Counters: authorizations, attempts, faults", tags } }, stats);
  // Also under /v1 where a test looks first; registered here so an outage cannot hide the counters.
  app.get(
    "/v1/stats",
    { schema: { summary: "Counters (same as /admin/stats; never faulted)", tags } },
    stats,
  );
}

function registerDifferences(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  app.put<{ Params: { date: string }; Body: DifferenceRequest }>(
    "/admin/settlements/:date/differences",
    {
      schema: {
        summary: "Inject differences into a closed day's settlement file (replaces earlier ones)",
        tags,
        params: dateParams,
        body: differencesBody,
      },
    },
    async (request) => {
      const { date } = request.params;
      const { day, rows } = closedDayRows(deps, date);
      const touched = request.body.dropRows + request.body.changeAmounts;
      if (touched > rows.length) {
        throw acquirerErrors.create("ACQUIRER_DIFFERENCES_TOO_MANY", {
          fields: {
            rows: rows.length,
            errors: [
              { field: "/body/dropRows", message: `dropRows + changeAmounts must be <= ${rows.length}` },
            ],
          },
        });
      }
      const differences = chooseDifferences(rows, request.body, deps.state.rng, day);
      deps.state.setDifferences(date, differences);
      return { date, differences: differences.map(differenceJson) };
    },
  );
  app.get<{ Params: { date: string } }>(
    "/admin/settlements/:date/differences",
    {
      schema: { summary: "The differences injected into a day's settlement file", tags, params: dateParams },
    },
    async (request) => ({
      date: request.params.date,
      differences: deps.state.differences(request.params.date).map(differenceJson),
    }),
  );
}

/** Registers /admin/* and /v1/stats on `app`; these never see injected faults. */
export function registerAdminRoutes(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  registerKnobs(app, deps);
  registerDifferences(app, deps);
}
