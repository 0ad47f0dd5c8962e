/**
 * The reconciliation exceptions API (PY-10), every answer scoped to the authenticated merchant —
 * an exception belongs to the merchant of its settlement row's payment (or refund):
 *
 *   GET  /v1/reconciliation/exceptions                 oldest first (a work queue), keyset cursor;
 *                                                      filters: status, kind, from/to settlement date
 *   GET  /v1/reconciliation/exceptions/{id}            one exception
 *   POST /v1/reconciliation/exceptions/{id}/resolve    {"action":"adjust"|"dismiss","note":…}
 *
 * `adjust` books NEW ledger entries (never an edit) so the ledger says what the acquirer settled,
 * and resolves the exception in the same transaction; `dismiss` closes it untouched (a note is
 * required: the audit trail says why). Resolving is idempotent by state: a second resolve with the
 * same action answers 200 with the stored result (nothing booked again, the first note kept); the
 * other action answers 409 PAYMENTS_RECON_EXCEPTION_RESOLVED. Another merchant's id answers 404
 * exactly like an id that does not exist. Bad input is a 400 naming the field, and writes nothing.
 *
 * @example
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   registerReconciliationRoutes(scope, { db, clock: systemClock, merchantOf: auth.merchantOf });
 * });
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { decodeCursor, encodeCursor } from "../domain/ledger-cursor.ts";
import type { ExceptionKind } from "../domain/reconciliation.ts";
import { reconciliationErrors } from "../errors.ts";
import { utcDay } from "../sim/settlement-file.ts";
import {
  findMerchantException,
  listMerchantExceptions,
  type ReconciliationException,
  type ResolutionAction,
  resolveMerchantException,
} from "../store/reconciliation-repository.ts";
import {
  DEFAULT_EXCEPTIONS_PAGE_SIZE,
  exceptionIdParams,
  exceptionPage,
  exceptionsQuery,
  exceptionView,
  resolveBody,
} from "./reconciliation-schemas.ts";

export interface ReconciliationRouteDeps {
  db: Database;
  clock: Clock;
  merchantOf(request: FastifyRequest): string;
}

interface ExceptionsQuery {
  status?: "open" | "resolved";
  kind?: ExceptionKind;
  from?: string;
  to?: string;
  limit?: number;
  cursor?: string;
}

const tags = ["reconciliation"];

function money(value: bigint | null): string | null {
  return value === null ? null : value.toString();
}

export function exceptionJson(e: ReconciliationException) {
  return {
    id: e.id.toString(),
    settlementDate: e.settlementDate,
    kind: e.kind,
    operation: e.operation,
    acquirerKey: e.acquirerKey,
    currency: e.currency,
    expectedMinor: money(e.expectedMinor),
    actualMinor: money(e.actualMinor),
    paymentId: e.paymentPublicId,
    refundId: e.refundPublicId,
    status: e.status,
    resolutionAction: e.resolutionAction,
    resolution: e.resolution,
    adjustmentTransactionId: money(e.adjustmentTransactionId),
    createdAt: e.createdAt.toISOString(),
    resolvedAt: e.resolvedAt?.toISOString() ?? null,
  };
}

function invalid(field: string, message: string): Error {
  return commonErrors.create("REQUEST_INVALID", { fields: { errors: [{ field, message }] } });
}

/** What the schema cannot say: real calendar dates, from ≤ to, a cursor we made. */
function checkQuery(query: ExceptionsQuery): { afterId: bigint } {
  for (const name of ["from", "to"] as const) {
    const value = query[name];
    if (value !== undefined && utcDay(value) === undefined)
      throw invalid(`/querystring/${name}`, "must be a calendar date YYYY-MM-DD");
  }
  if (query.from !== undefined && query.to !== undefined && query.from > query.to)
    throw invalid("/querystring/to", "must not be before `from`");
  if (query.cursor === undefined) return { afterId: 0n };
  try {
    return { afterId: decodeCursor(query.cursor) };
  } catch {
    throw invalid("/querystring/cursor", "must be the nextCursor of a previous page");
  }
}

function notFound(id: string): Error {
  return reconciliationErrors.create("PAYMENTS_RECON_EXCEPTION_NOT_FOUND", { fields: { id } });
}

function registerList(app: FastifyInstance, deps: ReconciliationRouteDeps): void {
  app.get<{ Querystring: ExceptionsQuery }>(
    "/v1/reconciliation/exceptions",
    {
      schema: {
        summary: "Your reconciliation exceptions, oldest first (cursor pagination)",
        description: "Differences between the ledger and the acquirer's D+1 settlement file, for operations.",
        tags,
        security: bearerSecurity,
        querystring: exceptionsQuery,
        response: { 200: exceptionPage },
      },
    },
    async (request) => {
      const { afterId } = checkQuery(request.query);
      const limit = request.query.limit ?? DEFAULT_EXCEPTIONS_PAGE_SIZE;
      const { status, kind, from, to } = request.query;
      // One row more than the page: whether there is a next page, without a count.
      const rows = await listMerchantExceptions(deps.db, deps.merchantOf(request), {
        ...(status === undefined ? {} : { status }),
        ...(kind === undefined ? {} : { kind }),
        ...(from === undefined ? {} : { from }),
        ...(to === undefined ? {} : { to }),
        afterId,
        limit: limit + 1,
      });
      const items = rows.slice(0, limit);
      return {
        items: items.map(exceptionJson),
        nextCursor: rows.length > limit ? encodeCursor(items.at(-1)!.id) : null,
      };
    },
  );
}

function registerOne(app: FastifyInstance, deps: ReconciliationRouteDeps): void {
  app.get<{ Params: { id: string } }>(
    "/v1/reconciliation/exceptions/:id",
    {
      schema: {
        summary: "One of your reconciliation exceptions",
        tags,
        security: bearerSecurity,
        params: exceptionIdParams,
        response: { 200: exceptionView },
      },
    },
    async (request) => {
      const found = await findMerchantException(deps.db, deps.merchantOf(request), BigInt(request.params.id));
      if (found === undefined) throw notFound(request.params.id);
      return exceptionJson(found);
    },
  );
}

function registerResolve(app: FastifyInstance, deps: ReconciliationRouteDeps): void {
  app.post<{ Params: { id: string }; Body: { action: ResolutionAction; note?: string } }>(
    "/v1/reconciliation/exceptions/:id/resolve",
    {
      schema: {
        summary: "Resolve one of your exceptions: adjust (new ledger entries) or dismiss",
        description:
          "Idempotent: the same action again answers the stored result; the other action on a resolved exception is 409.",
        tags,
        security: bearerSecurity,
        params: exceptionIdParams,
        body: resolveBody,
        response: { 200: exceptionView },
      },
    },
    async (request) => {
      const { action, note } = request.body;
      if (action === "dismiss" && note === undefined)
        throw invalid("/body/note", "is required to dismiss: say why for the audit trail");
      const { exception } = await resolveMerchantException(
        deps.db,
        deps.merchantOf(request),
        BigInt(request.params.id),
        { action, ...(note === undefined ? {} : { note }), nowMs: deps.clock.nowMs() },
      );
      return exceptionJson(exception);
    },
  );
}

/** Registers the exceptions API on `app` (inside the authenticated scope). */
export function registerReconciliationRoutes(app: FastifyInstance, deps: ReconciliationRouteDeps): void {
  registerList(app, deps);
  registerOne(app, deps);
  registerResolve(app, deps);
}
