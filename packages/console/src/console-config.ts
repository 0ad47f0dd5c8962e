/**
 * The console's settings, from the environment. `casebook up` sets PORT, HOST,
 * CASEBOOK_CONSOLE_SYSTEMS (where it started each system), CASEBOOK_TEST_REPORT and, when it
 * starts metrics, CASEBOOK_CONSOLE_METRICS_URL and its key; the
 * defaults serve a console started alone beside systems on their manifest ports.
 */

import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { field, loadConfig } from "@casebook/kit/config";

export const consolePort = 8100;

export const configSchema = {
  ...listenFields({ port: consolePort }),
  systems: field.string({
    env: "CASEBOOK_CONSOLE_SYSTEMS",
    description: 'The systems to show and where they run: [{"name":…,"url":…}] (casebook up sets it)',
  }),
  testReport: field.string({
    env: "CASEBOOK_TEST_REPORT",
    description: "The junit report `npm test` writes (default <repo>/.casebook-data/test-report.xml)",
  }),
  scrapeIntervalMs: field.durationMs({
    env: "CASEBOOK_CONSOLE_SCRAPE_INTERVAL",
    default: 2_000,
    min: 200,
    max: 60_000,
    description: "How often each system's /readyz and /metrics are read",
  }),
  windowScrapes: field.int({
    env: "CASEBOOK_CONSOLE_WINDOW_SCRAPES",
    default: 150,
    min: 2,
    max: 3_600,
    description: "Scrapes kept in memory per system (the plots' span is this × the interval)",
  }),
  metricsUrl: field.string({
    env: "CASEBOOK_CONSOLE_METRICS_URL",
    pattern: /^https?:\/\/\S+$/,
    maxLength: 2_048,
    description:
      "The metrics system: plots read its query API while it scrapes a system (casebook up sets it); unset = the in-memory window only",
  }),
  metricsApiKey: field.string({
    env: "CASEBOOK_CONSOLE_METRICS_API_KEY",
    secret: true,
    maxLength: 256,
    description: "A key of metrics' scrape tenant, for its query API (casebook up makes one)",
  }),
  adminToken: field.string({
    env: "CASEBOOK_CONSOLE_ADMIN_TOKEN",
    secret: true,
    minLength: 16,
    description: "Required to listen beyond loopback: the console's buttons will be destructive",
  }),
  ...logLevelField(),
};

export type ConsoleConfig = ReturnType<typeof loadConsoleConfig>;

export function loadConsoleConfig(env: NodeJS.ProcessEnv) {
  return loadConfig(configSchema, { env });
}
