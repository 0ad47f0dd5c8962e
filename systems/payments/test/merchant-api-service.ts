/**
 * The merchant API as main.ts wires it (`registerPaymentsApi`: the bearer check on real keys,
 * every merchant route in one scope), for tests of the account and ledger routes. Those tests
 * do not make payments, so the saga's orchestrator is never started and the acquirer client
 * points at a closed port: the payment routes are registered as in main and simply unused.
 */
import { randomBytes } from "node:crypto";
import { createService, type Service } from "@casebook/infra/http/service";
import { seededRandom } from "@casebook/kit/random";
import { registerPaymentsApi } from "../src/api/register-api.ts";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { paymentsErrorRegistries } from "../src/errors.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import type { MerchantRepository } from "../src/store/merchant-repository.ts";
import { SagaOrchestrator } from "../src/workers/saga-orchestrator.ts";
import type { MerchantSubject } from "./merchant-backends.ts";

/** Port 9 (discard) on loopback: nothing listens, and nothing here calls it. */
const UNUSED_ACQUIRER_URL = "http://127.0.0.1:9";

export async function merchantApiService(subject: MerchantSubject): Promise<Service> {
  const { db, ledger, merchants, clock } = subject;
  const service = createService({
    name: "payments-test",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    errors: paymentsErrorRegistries,
  });
  const random = seededRandom("merchant-api-service");
  const acquirer = new AcquirerClient({ baseUrl: UNUSED_ACQUIRER_URL, clock, random });
  const idempotency = paymentsIdempotencyStore(db, { clock });
  const orchestrator = new SagaOrchestrator({ db, acquirer, idempotency, clock, random, owner: "idle" });
  service.onClose(() => acquirer.close());
  await registerPaymentsApi(service.app, {
    db,
    ledger,
    merchants,
    idempotency,
    orchestrator,
    acquirer,
    clock,
    randomBytes,
    config: { inlineDriveMs: 2_000, breakerOpenMode: "accept" },
  });
  await service.app.ready();
  return service;
}

/**
 * Turns a test's `x-test-merchant: <id>` header (absent: `defaultMerchant`) into that merchant's
 * `Authorization: Bearer <key>`, making the merchant and its key on first use — so a test acts
 * as any merchant through the real bearer check.
 */
export function merchantKeyHeaders(
  merchants: MerchantRepository,
  defaultMerchant: string,
): (headers?: Record<string, string>) => Promise<Record<string, string>> {
  const keys = new Map<string, Promise<string>>();
  const keyOf = (id: string): Promise<string> => {
    let key = keys.get(id);
    if (key === undefined) {
      key = merchants.create({ id, name: `test merchant ${id}` }).then((made) => made.apiKey.key);
      keys.set(id, key);
    }
    return key;
  };
  return async (headers = {}) => {
    const { "x-test-merchant": who = defaultMerchant, ...rest } = headers;
    return { authorization: `Bearer ${await keyOf(who)}`, ...rest };
  };
}
