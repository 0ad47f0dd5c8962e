/**
 * The acquirer's part of the control panel (the knobs, reset and counters are the
 * simulator base's): the differences injected into a day's settlement file (PY-10),
 * with the list of exactly what was injected, and the arrivals per second (a caller's
 * promised rate checked where the calls land). Outside the fault hooks, like the rest
 * of /admin.
 *
 * @example
 * await fetch(`${url}/admin/settlements/2026-10-22/differences`, { method: "PUT", body: JSON.stringify({ dropRows: 1 }), headers });
 */
import type { FastifyInstance } from "fastify";
import { acquirerErrors } from "./acquirer-errors.ts";
import { type AcquirerRouteDeps, closedDayRows } from "./acquirer-routes.ts";
import { dateParams, differencesBody } from "./acquirer-schemas.ts";
import { chooseDifferences, type DifferenceRequest, type InjectedDifference } from "./settlement-file.ts";

const tags = ["admin"];

/** The full shape of `differenceJson`: Fastify serializes with it, so an undeclared field would be dropped. */
const differencesView = {
  type: "object",
  required: ["date", "differences"],
  additionalProperties: false,
  properties: {
    date: { type: "string", format: "date" },
    differences: {
      type: "array",
      items: {
        type: "object",
        required: [
          "kind",
          "idempotencyKey",
          "authorizationId",
          "operation",
          "amountMinor",
          "currency",
          "settledAt",
        ],
        additionalProperties: false,
        properties: {
          kind: { type: "string", enum: ["dropped", "amount-changed", "unknown"] },
          idempotencyKey: { type: "string" },
          authorizationId: { type: "string" },
          operation: { type: "string", enum: ["capture", "refund"] },
          amountMinor: { type: "string", pattern: "^-?[0-9]+$" },
          originalAmountMinor: { type: "string", pattern: "^-?[0-9]+$", description: "amount-changed only" },
          currency: { type: "string" },
          settledAt: { type: "string", format: "date-time" },
        },
      },
    },
  },
} as const;

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

function registerDifferences(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  app.put<{ Params: { date: string }; Body: DifferenceRequest }>(
    "/admin/settlements/:date/differences",
    {
      schema: {
        summary: "Inject differences into a closed day's settlement file (replaces earlier ones)",
        tags,
        params: dateParams,
        body: differencesBody,
        errorCodes: ["ACQUIRER_SETTLEMENT_NOT_READY", "ACQUIRER_DIFFERENCES_TOO_MANY"],
        response: { 200: differencesView },
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
      schema: {
        summary: "The differences injected into a day's settlement file",
        tags,
        params: dateParams,
        response: { 200: differencesView },
      },
    },
    async (request) => ({
      date: request.params.date,
      differences: deps.state.differences(request.params.date).map(differenceJson),
    }),
  );
}

/** Registers the acquirer's /admin routes on `app` (the base's admin scope: never faulted). */
export function registerAdminRoutes(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  registerDifferences(app, deps);
  registerArrivals(app, deps);
}

const arrivalsView = {
  type: "object",
  required: ["seconds"],
  additionalProperties: false,
  properties: {
    seconds: {
      type: "array",
      items: {
        type: "object",
        required: ["second", "at", "total", "operations"],
        additionalProperties: false,
        properties: {
          second: { type: "integer", description: "Unix time of the second's start" },
          at: { type: "string", format: "date-time" },
          total: { type: "integer" },
          operations: { type: "object", additionalProperties: { type: "integer" } },
        },
      },
    },
  },
} as const;

/** GET /admin/arrivals: the calls that reached /v1 in each second, by operation (the newest hour). */
function registerArrivals(app: FastifyInstance, deps: AcquirerRouteDeps): void {
  app.get(
    "/admin/arrivals",
    {
      schema: {
        summary:
          "Calls that arrived at /v1 in each whole second, by operation (oldest first, the newest hour)",
        tags,
        response: { 200: arrivalsView },
      },
    },
    async () => ({
      seconds: deps.arrivals.seconds().map((s) => ({ ...s, at: new Date(s.second * 1_000).toISOString() })),
    }),
  );
}
