/**
 * A new tenant API key from the running service's admin API, the tenant made first if new.
 *
 * `casebook webhooks new-key [--tenant ID] [--rotate [--expires-in-s N]]` calls the admin API
 * with WEBHOOKS_ADMIN_TOKEN. The mechanism is @casebook/infra/http/api-key-tool, shared with
 * payments.
 *
 * @example
 * // WEBHOOKS_ADMIN_TOKEN=… npx casebook webhooks new-key --tenant acme
 * // whk_1f…_Qx…         (stdout; what it is and a curl to try it on stderr)
 */
import { type ApiKeyToolSpec, runApiKeyTool } from "@casebook/infra/http/api-key-tool";

export const webhooksKeyTool: ApiKeyToolSpec = {
  system: "webhooks",
  owners: "tenants",
  owner: "tenant",
  defaultOwner: "demo",
  ownerNotFoundCode: "WEBHOOK_TENANT_NOT_FOUND",
  tokenEnv: "WEBHOOKS_ADMIN_TOKEN",
  // The service's default PORT (config.ts, listenFields).
  defaultPort: 8113,
  tryCommand: (url, key) => `curl -s -H 'Authorization: Bearer ${key}' ${url}/v1/subscriptions`,
};

if (import.meta.main) {
  process.exitCode = await runApiKeyTool(webhooksKeyTool, process.argv.slice(2), process.env, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
}
