/**
 * The settings of {{name}}: environment variables, validated at start — a bad value fails
 * the start with one message naming it (ARCHITECTURE rule 5), and `--help` lists them all.
 * The default port is the manifest's (`casebook.port` in package.json), read from there so
 * `casebook up` and a bare `node src/main.ts` can never disagree on it. Checks across
 * fields (one bound that must exceed another) go in `loadSystemConfig`, after the per-field
 * ones, as `webhooks-config.ts` does.
 *
 * @example
 * const config = loadSystemConfig({ PORT: "0", LOG_LEVEL: "silent" });
 * config.port; // 0
 */
import { type ConfigOf, field, loadConfig } from "@casebook/kit/config";
import packageJson from "../package.json" with { type: "json" };

export const logLevels = ["debug", "info", "warn", "error", "silent"] as const;

export const configSchema = {
  port: field.int({
    env: "PORT",
    default: packageJson.casebook.port,
    min: 0,
    max: 65535,
    description: "HTTP port (0 = any free port)",
  }),
  host: field.string({ env: "HOST", default: "127.0.0.1", description: "HTTP interface (0.0.0.0 for all)" }),
  logLevel: field.enum(logLevels, { env: "LOG_LEVEL", default: "info", description: "Log level" }),
};

export type SystemConfig = ConfigOf<typeof configSchema>;

export function loadSystemConfig(env: NodeJS.ProcessEnv): SystemConfig {
  return loadConfig(configSchema, { env });
}
