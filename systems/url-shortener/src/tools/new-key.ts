/**
 * A new workspace API key from the running service's admin API, the workspace made first if
 * new: `casebook url-shortener new-key [--workspace ID] [--rotate [--expires-in-s N]]`, with
 * URL_SHORTENER_ADMIN_TOKEN. The mechanism is @casebook/infra/http/api-key-tool, shared with
 * payments and webhooks.
 *
 * @example
 * // URL_SHORTENER_ADMIN_TOKEN=… npx casebook url-shortener new-key --workspace acme
 */
import { type ApiKeyToolSpec, runApiKeyTool } from "@casebook/infra/http/api-key-tool";
import packageJson from "../../package.json" with { type: "json" };

export const shortenerKeyTool: ApiKeyToolSpec = {
  system: "url-shortener",
  owners: "workspaces",
  owner: "workspace",
  defaultOwner: "demo",
  ownerNotFoundCode: "WORKSPACE_NOT_FOUND",
  tokenEnv: "URL_SHORTENER_ADMIN_TOKEN",
  defaultPort: packageJson.casebook.port,
  tryCommand: (url, key) =>
    `curl -s ${url}/v1/links -H 'Authorization: Bearer ${key}' -H 'content-type: application/json' -d '{"url":"https://example.com/"}'`,
};

if (import.meta.main) {
  process.exitCode = await runApiKeyTool(shortenerKeyTool, process.argv.slice(2), process.env, {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  });
}
