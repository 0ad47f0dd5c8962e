/**
 * The settings of feed: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * Where it listens and its log level are infra's presets, as in every service; the default
 * port is the manifest's (`casebook.port` in package.json), read from there so
 * `casebook up` and a bare `node src/main.ts` can never disagree on it. The first store
 * adds `...databaseFields({ system: "feed", envPrefix: "FEED_DB", fields: [...] })`
 * here; checks across fields (one bound that must exceed another) go in `loadSystemConfig`,
 * after the per-field ones, as webhooks' `config.ts` does.
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.port; // 0
 */
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { type ConfigOf, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };

export const configSchema = {
  ...listenFields({ port: packageJson.casebook.port, portDescription: "HTTP port (0 = any free port)" }),
  ...logLevelField(),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  return loadConfig(configSchema, { env });
}
