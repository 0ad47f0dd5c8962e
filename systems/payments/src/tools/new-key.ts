/**
 * A new merchant API key from the running service's admin API, the merchant made first if new.
 *
 * `casebook payments new-key [--merchant ID] [--rotate [--expires-in-s N]]` calls the admin API
 * with PAYMENTS_ADMIN_TOKEN; creating the merchant when it does not exist is how the first
 * merchant of an empty PostgreSQL is made. The mechanism is @casebook/infra/http/api-key-tool,
 * shared with webhooks.
 *
 * @example
 * // PAYMENTS_ADMIN_TOKEN=… npx casebook payments new-key --merchant acme
 * // sk_1f…_Qx…          (stdout; what it is and a curl to try it on stderr)
 */
import { type ApiKeyToolSpec, runApiKeyTool } from "@casebook/infra/http/api-key-tool";

export const paymentsKeyTool: ApiKeyToolSpec = {
  system: "payments",
  owners: "merchants",
  owner: "merchant",
  defaultOwner: "demo",
  ownerNotFoundCode: "PAYMENTS_MERCHANT_NOT_FOUND",
  tokenEnv: "PAYMENTS_ADMIN_TOKEN",
  // The service's default PORT (main.ts, listenFields).
  defaultPort: 8104,
  tryCommand: (url, key) => `curl -s -H 'Authorization: Bearer ${key}' ${url}/v1/accounts`,
};

if (import.meta.main) {
  process.exitCode = await runApiKeyTool(paymentsKeyTool, process.argv.slice(2), process.env, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
}
