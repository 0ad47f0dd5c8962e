/**
 * The whole merchant HTTP API on a Fastify instance, wired the one way main.ts uses: every
 * merchant route (accounts, the ledger API, payments, refunds, reconciliation exceptions) in one
 * scope whose onRequest hooks authenticate the API key (a stranger is refused before any body is
 * parsed) and give a payment request's log lines its correlation id (PY-17); the operator's
 * routes in another scope behind PAYMENTS_ADMIN_TOKEN, registered only when a token is set.
 * Both are @casebook/infra/http/bearer-auth in realm "payments".
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
import type { FastifyInstance } from "fastify";
import type { AcquirerClient } from "../clients/acquirer-client.ts";
import { correlatePaymentRequests } from "../metrics.ts";
import type { LedgerRepository } from "../store/ledger-repository.ts";
import type { MerchantRepository } from "../store/merchant-repository.ts";
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
}

export async function registerPaymentsApi(app: FastifyInstance, options: PaymentsApiOptions): Promise<void> {
  const { db, ledger, merchants, idempotency, orchestrator, acquirer, clock, config } = options;
  const auth = createBearerAuth({ realm: REALM, verify: (key) => merchants.authenticate(key) });
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
  await registerPaymentsAdminApi(app, { db, clock, randomBytes: options.randomBytes, adminToken });
}
