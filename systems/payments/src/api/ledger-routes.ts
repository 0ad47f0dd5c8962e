/**
 * The ledger API (issue 14): the double-entry ledger reachable as Formance, Blnk and
 * TigerBeetle users expect, scoped to the authenticated merchant.
 * - POST /v1/ledger/accounts (Idempotency-Key): open an account (currency, noOverdraft, metadata);
 * - GET /v1/ledger/accounts/{id}: it and its posted / pending / available balances;
 * - GET /v1/ledger/accounts/{id}/entries: its entries, newest first, keyset pages (never OFFSET);
 * - POST /v1/ledger/transfers (Idempotency-Key = the transfer's key): one transfer through the
 *   group commit, answered with TigerBeetle's result code (`ok` 201, `exists` 200, the others 4xx);
 * - GET /v1/ledger/transfers/{id}: one of the merchant's transfers;
 * - POST /v1/ledger/transfers/{id}/post | void: settle a pending one;
 * - POST /v1/ledger/transfers/batch: up to MAX_BATCH_TRANSFERS transfers, each with its own key
 *   and result, `linked` chains committing whole or not at all (LedgerRepository.createTransfers).
 *
 * Tenancy: the API moves money only between accounts the merchant opened through it
 * (store/ledger-api-accounts.ts); any other account id — another merchant's, a payment's own, an
 * unknown one — reads as `account_not_found` (404). A transfer's ledger key is
 * `api:<merchant>:<key>` (domain/derived-keys.ts): two merchants' keys never meet, and a
 * transaction is the merchant's exactly when its key has that prefix.
 *
 * @example
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   registerLedgerRoutes(scope, { db, ledger, merchantOf: auth.principalOf });
 * });
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import { commonErrors } from "@casebook/kit/errors";
import { currencyProblem } from "@casebook/kit/iso-4217";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { apiTransferLedgerKey } from "../domain/derived-keys.ts";
import { canonicalJson, MAX_AMOUNT_MINOR, MAX_METADATA_BYTES, type Metadata } from "../domain/ledger.ts";
import { ledgerErrors } from "../errors.ts";
import {
  type ApiAccount,
  findApiAccount,
  openApiAccount,
  ownedApiAccountIds,
} from "../store/ledger-api-accounts.ts";
import { isApiTransferOf } from "../store/ledger-api-transfers.ts";
import type { TransferOutcome } from "../store/ledger-group-write.ts";
import type { LedgerRepository, LedgerTransaction } from "../store/ledger-repository.ts";
import {
  accountBody,
  accountView,
  batchAnswer,
  batchBody,
  DEFAULT_ENTRIES_PAGE,
  entriesQuery,
  entryPage,
  idParams,
  transferAnswer,
  transferBody,
  transferView,
} from "./ledger-schemas.ts";
import { idempotencyKeyOf, keyedHeaders } from "./payment-request.ts";

export interface LedgerRouteDeps {
  db: Database;
  ledger: LedgerRepository;
  merchantOf(request: FastifyRequest): string;
}

interface FieldError {
  field: string;
  message: string;
}

interface TransferInput {
  debitAccountId: string;
  creditAccountId: string;
  amountMinor: string | number;
  currency: string;
  pending?: boolean;
  timeoutS?: number;
  metadata?: Metadata;
}

interface BatchInput {
  transfers: (TransferInput & { idempotencyKey: string; linked?: boolean })[];
}

const tags = ["ledger"];
/** A transfer id in a route's path: the shape `idParams` checks, so anything else matches no route. */
const TRANSFER_ID_ROUTE_PATTERN = "^[1-9][0-9]{0,17}$";

function invalid(errors: FieldError[]): Error {
  return commonErrors.create("REQUEST_INVALID", { fields: { errors } });
}

/** What ajv cannot say: an active currency, the amount's bound, the metadata's size. */
function metadataProblem(metadata: Metadata | undefined, at: string, errors: FieldError[]): void {
  if (metadata !== undefined && Buffer.byteLength(canonicalJson(metadata)) > MAX_METADATA_BYTES)
    errors.push({ field: at, message: `must be at most ${MAX_METADATA_BYTES} bytes serialized` });
}

function checkTransfer(input: TransferInput, at: string, errors: FieldError[]): void {
  const currency = currencyProblem(input.currency);
  if (currency !== undefined) errors.push({ field: `${at}/currency`, message: currency });
  if (BigInt(input.amountMinor) > MAX_AMOUNT_MINOR)
    errors.push({ field: `${at}/amountMinor`, message: `must be at most ${MAX_AMOUNT_MINOR}` });
  if (input.debitAccountId === input.creditAccountId)
    errors.push({ field: `${at}/creditAccountId`, message: "must differ from debitAccountId" });
  if (input.timeoutS !== undefined && input.pending !== true)
    errors.push({ field: `${at}/timeoutS`, message: "is for pending transfers only (pending: true)" });
  metadataProblem(input.metadata, `${at}/metadata`, errors);
}

function transferRequestOf(merchantId: string, key: string, input: TransferInput) {
  return {
    idemKey: apiTransferLedgerKey(merchantId, key),
    from: BigInt(input.debitAccountId),
    to: BigInt(input.creditAccountId),
    amount: BigInt(input.amountMinor),
    currency: input.currency,
    pending: input.pending === true,
    ...(input.timeoutS === undefined ? {} : { timeoutS: input.timeoutS }),
    ...(input.metadata === undefined ? {} : { metadata: input.metadata }),
  };
}

function accountJson(account: ApiAccount) {
  return {
    id: account.id.toString(),
    currency: account.currency,
    noOverdraft: account.noOverdraft,
    metadata: account.metadata,
    createdAt: account.createdAt.toISOString(),
    balances: {
      posted: account.balances.posted.toString(),
      pending: account.balances.pending.toString(),
      available: account.balances.available.toString(),
    },
  };
}

/** A two-leg transfer as the API shows it (every API transfer has one debit and one credit). */
function transferJson(transaction: LedgerTransaction) {
  const debit = transaction.entries.find((e) => e.direction === "D")!;
  const credit = transaction.entries.find((e) => e.direction === "C")!;
  return {
    id: transaction.id.toString(),
    status: transaction.status,
    debitAccountId: debit.accountId.toString(),
    creditAccountId: credit.accountId.toString(),
    amountMinor: debit.amount.toString(),
    currency: debit.currency,
    timeoutS: transaction.timeoutS,
    expiresAt: transaction.expiresAt?.toISOString() ?? null,
    metadata: transaction.metadata,
    createdAt: transaction.createdAt.toISOString(),
  };
}

/** A refused single transfer as problem+json, its TigerBeetle code in `result`. */
function refusal(outcome: TransferOutcome): Error {
  switch (outcome.code) {
    case "account_not_found":
      return ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", {
        fields: { result: outcome.code, accountId: outcome.accountId.toString() },
      });
    case "currency_mismatch":
      return ledgerErrors.create("LEDGER_CURRENCY_MISMATCH", {
        fields: {
          result: outcome.code,
          accountId: outcome.accountId.toString(),
          accountCurrency: outcome.accountCurrency,
          entryCurrency: outcome.entryCurrency,
        },
      });
    case "exceeds_credits":
      return ledgerErrors.create("LEDGER_INSUFFICIENT_FUNDS", {
        fields: { result: outcome.code, accountIds: outcome.accountIds.map(String) },
      });
    case "exists_with_different_entries":
    case "exists_with_different_metadata":
    case "exists_with_different_flags":
    case "exists_with_different_timeout":
      return ledgerErrors.create("LEDGER_IDEMPOTENCY_CONFLICT", {
        fields: { result: outcome.code, transferId: outcome.transaction?.id.toString() },
      });
    case "write_failed":
      return outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error));
    default:
      return new Error(`unexpected outcome ${outcome.code} for a lone transfer`);
  }
}

/** One batch result: the code, and what it names. */
function resultJson(outcome: TransferOutcome, index: number) {
  const result: Record<string, unknown> = { index, result: outcome.code };
  if ("transaction" in outcome && outcome.transaction !== undefined)
    result.transfer = transferJson(outcome.transaction);
  if (outcome.code === "account_not_found" || outcome.code === "currency_mismatch")
    result.accountId = outcome.accountId.toString();
  if (outcome.code === "exceeds_credits") result.accountIds = outcome.accountIds.map(String);
  return result;
}

/** The merchant's account, or 404 (unknown, another merchant's and a payment's own look the same). */
async function ownedAccount(deps: LedgerRouteDeps, request: FastifyRequest, id: string): Promise<ApiAccount> {
  const account = await findApiAccount(deps.db, deps.merchantOf(request), BigInt(id));
  if (!account) throw ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", { fields: { accountId: id } });
  return account;
}

/** The route's transfer when it is the merchant's; another's, a payment's or an unknown one is 404. */
async function ownedTransferId(deps: LedgerRouteDeps, request: FastifyRequest): Promise<bigint> {
  const { id } = request.params as { id: string };
  if (!(await isApiTransferOf(deps.db, deps.merchantOf(request), BigInt(id))))
    throw ledgerErrors.create("LEDGER_TRANSACTION_NOT_FOUND", { fields: { id } });
  return BigInt(id);
}

/** Posts or voids the merchant's pending transfer. */
async function settle(deps: LedgerRouteDeps, request: FastifyRequest, outcome: "post" | "void") {
  const id = await ownedTransferId(deps, request);
  const transaction = outcome === "post" ? await deps.ledger.post(id) : await deps.ledger.void(id);
  return transferJson(transaction);
}

const transferCodes = [
  "REQUEST_INVALID",
  "PAYMENTS_IDEMPOTENCY_KEY_MISSING",
  "LEDGER_ACCOUNT_NOT_FOUND",
  "LEDGER_CURRENCY_MISMATCH",
  "LEDGER_INSUFFICIENT_FUNDS",
  "LEDGER_IDEMPOTENCY_CONFLICT",
  "GROUP_COMMIT_QUEUE_FULL",
];

export function registerLedgerRoutes(app: FastifyInstance, deps: LedgerRouteDeps): void {
  app.post<{ Body: { currency: string; noOverdraft?: boolean; metadata?: Metadata } }>(
    "/v1/ledger/accounts",
    {
      schema: {
        summary: "Open a ledger account (Idempotency-Key required): 201, or 200 for a retried key",
        tags,
        security: bearerSecurity,
        headers: keyedHeaders,
        body: accountBody,
        errorCodes: ["REQUEST_INVALID", "PAYMENTS_IDEMPOTENCY_KEY_MISSING", "LEDGER_IDEMPOTENCY_CONFLICT"],
        response: { 200: accountView, 201: accountView },
      },
    },
    async (request, reply) => {
      const key = idempotencyKeyOf(request);
      const { currency, noOverdraft = false, metadata = {} } = request.body;
      const errors: FieldError[] = [];
      const problem = currencyProblem(currency);
      if (problem !== undefined) errors.push({ field: "/body/currency", message: problem });
      metadataProblem(metadata, "/body/metadata", errors);
      if (errors.length > 0) throw invalid(errors);
      const opened = await openApiAccount(deps.db, deps.merchantOf(request), key, {
        currency,
        noOverdraft,
        metadata,
      });
      reply.code(opened.replayed ? 200 : 201);
      return accountJson(opened.account);
    },
  );

  app.get<{ Params: { id: string } }>(
    "/v1/ledger/accounts/:id",
    {
      schema: {
        summary: "One of your ledger accounts with its posted, pending and available balances",
        tags,
        security: bearerSecurity,
        params: idParams,
        errorCodes: ["LEDGER_ACCOUNT_NOT_FOUND"],
        response: { 200: accountView },
      },
    },
    async (request) => accountJson(await ownedAccount(deps, request, request.params.id)),
  );

  app.get<{ Params: { id: string }; Querystring: { limit?: number; cursor?: string } }>(
    "/v1/ledger/accounts/:id/entries",
    {
      schema: {
        summary: "An account's entries, newest first (cursor pages: pass nextCursor back)",
        tags,
        security: bearerSecurity,
        params: idParams,
        querystring: entriesQuery,
        errorCodes: ["LEDGER_ACCOUNT_NOT_FOUND", "LEDGER_CURSOR_INVALID"],
        response: { 200: entryPage },
      },
    },
    async (request) => {
      const account = await ownedAccount(deps, request, request.params.id);
      const { limit = DEFAULT_ENTRIES_PAGE, cursor } = request.query;
      const page = await deps.ledger.entries(account.id, {
        limit,
        ...(cursor === undefined ? {} : { cursor }),
      });
      return {
        items: page.items.map((entry) => ({
          id: entry.id.toString(),
          transferId: entry.transactionId.toString(),
          direction: entry.direction,
          amountMinor: entry.amount.toString(),
          currency: entry.currency,
        })),
        nextCursor: page.nextCursor ?? null,
      };
    },
  );

  app.post<{ Body: TransferInput }>(
    "/v1/ledger/transfers",
    {
      schema: {
        summary: "One transfer (Idempotency-Key = its key): result ok 201, exists 200, any other code a 4xx",
        description:
          "Debits debitAccountId and credits creditAccountId; with pending, a hold to post or void later. Goes through the group commit.",
        tags,
        security: bearerSecurity,
        headers: keyedHeaders,
        body: transferBody,
        errorCodes: transferCodes,
        response: { 200: transferAnswer, 201: transferAnswer },
      },
    },
    async (request, reply) => {
      const key = idempotencyKeyOf(request);
      const input = request.body;
      const errors: FieldError[] = [];
      checkTransfer(input, "/body", errors);
      if (errors.length > 0) throw invalid(errors);
      const merchantId = deps.merchantOf(request);
      const owned = await ownedApiAccountIds(deps.db, merchantId, [
        BigInt(input.debitAccountId),
        BigInt(input.creditAccountId),
      ]);
      for (const id of [input.debitAccountId, input.creditAccountId]) {
        if (!owned.has(BigInt(id)))
          throw ledgerErrors.create("LEDGER_ACCOUNT_NOT_FOUND", {
            fields: { result: "account_not_found", accountId: id },
          });
      }
      const outcome = await deps.ledger.submitTransfer(transferRequestOf(merchantId, key, input));
      if (outcome.code !== "ok" && outcome.code !== "exists") throw refusal(outcome);
      reply.code(outcome.code === "ok" ? 201 : 200);
      return { result: outcome.code, transfer: transferJson(outcome.transaction!) };
    },
  );

  app.post<{ Body: BatchInput }>(
    "/v1/ledger/transfers/batch",
    {
      schema: {
        summary: "Up to 1 000 transfers: a result per transfer, `linked` chains all or nothing (200)",
        description:
          "TigerBeetle's create_transfers: decided in order as if applied one by one, written in one database transaction. Each transfer's idempotencyKey is its retry handle: a retried batch answers `exists` for those already written.",
        tags,
        security: bearerSecurity,
        body: batchBody,
        errorCodes: ["REQUEST_INVALID", "LEDGER_BATCH_INVALID"],
        response: { 200: batchAnswer },
      },
    },
    async (request) => {
      const { transfers } = request.body;
      const errors: FieldError[] = [];
      transfers.forEach((input, i) => {
        checkTransfer(input, `/body/transfers/${i}`, errors);
      });
      if (errors.length > 0) throw invalid(errors);
      const merchantId = deps.merchantOf(request);
      const ids = transfers.flatMap((t) => [BigInt(t.debitAccountId), BigInt(t.creditAccountId)]);
      const owned = await ownedApiAccountIds(deps.db, merchantId, ids);
      const items = transfers.map((input) => {
        const foreign = [input.debitAccountId, input.creditAccountId].find((id) => !owned.has(BigInt(id)));
        return {
          request: transferRequestOf(merchantId, input.idempotencyKey, input),
          linked: input.linked === true,
          ...(foreign === undefined
            ? {}
            : { refuse: { code: "account_not_found" as const, accountId: BigInt(foreign) } }),
        };
      });
      const outcomes = await deps.ledger.createTransfers(items);
      return { results: outcomes.map(resultJson) };
    },
  );

  // Only an id matches (find-my-way's regex param): `GET …/transfers/batch` is no transfer, so it
  // stays the batch resource's 405 (Allow: POST) instead of a 400 about a malformed id.
  app.get<{ Params: { id: string } }>(
    `/v1/ledger/transfers/:id(${TRANSFER_ID_ROUTE_PATTERN})`,
    {
      schema: {
        summary: "One of your transfers: its status (pending, posted, voided), accounts, amount and timeout",
        tags,
        security: bearerSecurity,
        params: idParams,
        errorCodes: ["LEDGER_TRANSACTION_NOT_FOUND"],
        response: { 200: transferView },
      },
    },
    async (request) => transferJson(await deps.ledger.transaction(await ownedTransferId(deps, request))),
  );

  for (const outcome of ["post", "void"] as const) {
    app.post<{ Params: { id: string } }>(
      `/v1/ledger/transfers/:id/${outcome}`,
      {
        schema: {
          summary:
            outcome === "post"
              ? "Post a pending transfer: its amounts move from pending to posted (again: a no-op)"
              : "Void a pending transfer: its amounts are released (again: a no-op)",
          tags,
          security: bearerSecurity,
          params: idParams,
          errorCodes: [
            "LEDGER_TRANSACTION_NOT_FOUND",
            "LEDGER_TRANSACTION_NOT_PENDING",
            "LEDGER_PENDING_EXPIRED",
          ],
          response: { 200: transferView },
        },
      },
      (request: FastifyRequest, _reply: FastifyReply) => settle(deps, request, outcome),
    );
  }
}
