/**
 * A new API key for a user from the running service's admin API, the user made first if new:
 * `casebook feed new-key [--user ID] [--rotate [--expires-in-s N]]`, with FEED_ADMIN_TOKEN.
 * The mechanism is @casebook/infra/http/api-key-tool, shared with payments, webhooks and
 * url-shortener.
 *
 * @example
 * // FEED_ADMIN_TOKEN=… npx casebook feed new-key --user 1
 */
import { type ApiKeyToolSpec, runApiKeyTool } from "@casebook/infra/http/api-key-tool";
import packageJson from "../../package.json" with { type: "json" };

export const feedKeyTool: ApiKeyToolSpec = {
  system: "feed",
  owners: "users",
  owner: "user",
  defaultOwner: "1",
  ownerNotFoundCode: "USER_NOT_FOUND",
  tokenEnv: "FEED_ADMIN_TOKEN",
  defaultPort: packageJson.casebook.port,
  tryCommand: (url, key) => `curl -s ${url}/v1/me -H 'Authorization: Bearer ${key}'`,
};

if (import.meta.main) {
  process.exitCode = await runApiKeyTool(feedKeyTool, process.argv.slice(2), process.env, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
}
