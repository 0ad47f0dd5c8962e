/**
 * The account API, every answer scoped to the authenticated merchant:
 * - GET /v1/accounts: the merchant's ledger accounts (three per currency) with balances;
 * - GET /v1/accounts/{id}: one account with its posted / pending / available balances;
 * - GET /v1/accounts/{id}/transactions: its transactions, newest first, keyset-paginated.
 * Another merchant's account id answers 404 exactly like an id that does not exist (never
 * 403: the answer must not reveal that the id is someone's).
 *
 * @example
 * app.register(async (scope) => {
 *   scope.addHook("onRequest", auth.authenticate);
 *   registerAccountRoutes(scope, { db, ledger, merchantOf: auth.merchantOf });
 * });
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Queryable } from "@casebook/infra/sql/sql";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { merchantErrors } from "../errors.ts";
import type { LedgerRepository, LedgerTransaction } from "../store/ledger-repository.ts";
import {
  findMerchantAccount,
  listMerchantAccounts,
  type MerchantAccountView,
  merchantAccountIds,
} from "../store/merchant-accounts.ts";
import {
  accountIdParams,
  accountList,
  accountView,
  DEFAULT_TRANSACTIONS_PAGE,
  transactionPage,
  transactionsQuery,
} from "./account-schemas.ts";

export interface AccountRouteDeps {
  db: Queryable;
  ledger: LedgerRepository;
  merchantOf(request: FastifyRequest): string;
}

const tags = ["accounts"];
const MAX_INT8 = 2n ** 63n - 1n;

function toAccountJson(account: MerchantAccountView) {
  return {
    id: account.accountId.toString(),
    currency: account.currency,
    role: account.role,
    noOverdraft: account.noOverdraft,
    createdAt: account.createdAt.toISOString(),
    balances: {
      posted: account.balances.posted.toString(),
      pending: account.balances.pending.toString(),
      available: account.balances.available.toString(),
    },
  };
}

function toTransactionJson(transaction: LedgerTransaction, visible: ReadonlySet<bigint>) {
  return {
    id: transaction.id.toString(),
    status: transaction.status,
    reversesId: transaction.reversesId?.toString() ?? null,
    createdAt: transaction.createdAt.toISOString(),
    metadata: transaction.metadata,
    entries: transaction.entries
      .filter((entry) => visible.has(entry.accountId))
      .map((entry) => ({
        id: entry.id.toString(),
        accountId: entry.accountId.toString(),
        currency: entry.currency,
        direction: entry.direction,
        amount: entry.amount.toString(),
      })),
  };
}

/** The account if it is the merchant's; 404 otherwise (unknown and foreign ids look the same). */
async function ownedAccount(db: Queryable, merchantId: string, id: string): Promise<MerchantAccountView> {
  const accountId = BigInt(id);
  const account = accountId <= MAX_INT8 ? await findMerchantAccount(db, merchantId, accountId) : undefined;
  if (!account) throw merchantErrors.create("PAYMENTS_ACCOUNT_NOT_FOUND", { fields: { accountId: id } });
  return account;
}

export function registerAccountRoutes(app: FastifyInstance, deps: AccountRouteDeps): void {
  app.get(
    "/v1/accounts",
    {
      schema: {
        summary: "List your ledger accounts with their balances",
        description:
          "Three accounts per currency you have used: customer_funds, merchant_pending, merchant_available.",
        tags,
        security: bearerSecurity,
        response: { 200: accountList },
      },
    },
    async (request) => {
      const accounts = await listMerchantAccounts(deps.db, deps.merchantOf(request));
      return { items: accounts.map(toAccountJson) };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/v1/accounts/:id",
    {
      schema: {
        summary: "One of your accounts with its posted, pending and available balances",
        tags,
        security: bearerSecurity,
        params: accountIdParams,
        response: { 200: accountView },
      },
    },
    async (request) =>
      toAccountJson(await ownedAccount(deps.db, deps.merchantOf(request), request.params.id)),
  );

  app.get<{ Params: { id: string }; Querystring: { limit?: number; cursor?: string } }>(
    "/v1/accounts/:id/transactions",
    {
      schema: {
        summary: "Transactions of one of your accounts, newest first (cursor pagination)",
        tags,
        security: bearerSecurity,
        params: accountIdParams,
        querystring: transactionsQuery,
        response: { 200: transactionPage },
      },
    },
    async (request) => {
      const merchantId = deps.merchantOf(request);
      const account = await ownedAccount(deps.db, merchantId, request.params.id);
      const { limit = DEFAULT_TRANSACTIONS_PAGE, cursor } = request.query;
      const page = await deps.ledger.transactions(account.accountId, {
        limit,
        ...(cursor === undefined ? {} : { cursor }),
      });
      const visible = await merchantAccountIds(deps.db, merchantId);
      return {
        items: page.items.map((transaction) => toTransactionJson(transaction, visible)),
        nextCursor: page.nextCursor ?? null,
      };
    },
  );
}
