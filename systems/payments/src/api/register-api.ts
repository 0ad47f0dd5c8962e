/**
 * The whole merchant HTTP API on a Fastify instance, wired the one way main.ts uses: every
 * merchant route (accounts, the ledger API, payments, refunds, reconciliation exceptions) in one
 * scope whose onRequest hooks authenticate the API key (a stranger is refused before any body is
 * parsed) and give a payment request's log lines its correlation id (PY-17); the operator's
 * routes in another scope behind PAYMENTS_ADMIN_TOKEN, registered only when a token is set.
 * Both are @casebook/infra/http/bearer-auth in realm "payments". Verified keys are remembered for
 * `keyCacheTtlMs` (kit's VerifiedKeyCache, re-checked in the background while in use): a key
 * revoked elsewhere keeps working here up to that long, one revoked through this process's admin
 * API stops at once.
 *
 * @example
 * await registerPaymentsApi(service.app, { db, ledger, merchants, idempotency, orchestrator, acquirer,
 *   clock: systemClock, randomBytes, config: { inlineDriveMs: 2_000, breakerOpenMode: "accept" } });
 */
import { createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import { VerifiedKeyCache } from "@casebook/kit/verified-key-cache";
import type { FastifyInstance } from "fastify";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import { correlatePaymentRequests } from "../metrics.ts";
import type { LedgerRepository } from "../store/ledger-repository.ts";
import { type MerchantRepository, merchantKeys } from "../store/merchant-repository.ts";
import { PaymentCreateGroup } from "../store/payment-create-group.ts";
import type { SagaOrchestrator } from "../workers/saga-orchestrator.ts";
import { registerAccountRoutes } from "./account-routes.ts";
import { registerPaymentsAdminApi } from "./admin-routes.ts";
import { registerLedgerRoutes } from "./ledger-routes.ts";
import type { PaymentRoutesConfig } from "./payment-request.ts";
import { registerPaymentRoutes } from "./payment-routes.ts";
import { registerReconciliationRoutes } from "./reconciliation-routes.ts";
import { registerRefundRoutes } from "./refund-routes.ts";

/** `WWW-Authenticate: Bearer realm="payments"` on every 401. */
const REALM = "payments";

export interface PaymentsApiOptions {
  db: Database;
  ledger: LedgerRepository;
  /** Verifies merchant API keys (and makes merchants through the admin API). */
  merchants: MerchantRepository;
  idempotency: IdempotencyStore;
  orchestrator: SagaOrchestrator;
  acquirer: AcquirerClient;
  clock: Clock;
  /** Cryptographically secure in production (node:crypto `randomBytes`): admin-made API keys. */
  randomBytes: RandomBytes;
  config: PaymentRoutesConfig;
  /** PAYMENTS_ADMIN_TOKEN; undefined: no admin routes at all. */
  adminToken?: string | undefined;
  /** PAYMENTS_KEY_CACHE_TTL_MS: how long a verified key is trusted without the table; 0 = every request asks. */
  keyCacheTtlMs?: number;
}

/** Merchants' keys remembered at once, at most (the oldest leaves first). */
const MAX_CACHED_KEYS = 10_000;

export async function registerPaymentsApi(app: FastifyInstance, options: PaymentsApiOptions): Promise<void> {
  const { db, ledger, merchants, idempotency, orchestrator, acquirer, clock, config } = options;
  const keys = new VerifiedKeyCache(
    {
      parse: (key) => merchantKeys.scheme.parse(key),
      verify: (presented) => merchants.authenticatePresented(presented),
    },
    { clock, ttlMs: options.keyCacheTtlMs ?? 0, maxEntries: MAX_CACHED_KEYS },
  );
  const stopRefreshing = keys.startRefreshing();
  app.addHook("onClose", async () => stopRefreshing());
  const auth = createBearerAuth({ realm: REALM, verify: (key) => keys.get(key) });
  const merchantOf = auth.principalOf;
  // Every merchant route lives in this scope: authenticated on request, before any body is parsed.
  await app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    scope.addHook("onRequest", correlatePaymentRequests(merchantOf));
    registerAccountRoutes(scope, { db, ledger, merchantOf });
    registerLedgerRoutes(scope, { db, ledger, merchantOf });
    const creates = new PaymentCreateGroup(db, idempotency);
    const paymentDeps = { db, idempotency, orchestrator, acquirer, clock, merchantOf, config, creates };
    registerPaymentRoutes(scope, paymentDeps);
    registerRefundRoutes(scope, paymentDeps);
    registerReconciliationRoutes(scope, { db, clock, merchantOf });
  });
  const { adminToken } = options;
  if (adminToken === undefined) return;
  await registerPaymentsAdminApi(app, {
    db,
    clock,
    randomBytes: options.randomBytes,
    adminToken,
    onKeysChanged: () => keys.clear(),
  });
}
