/**
 * The console's settings, from the environment. `casebook up` sets PORT, HOST,
 * CASEBOOK_CONSOLE_SYSTEMS (where it started each system) and CASEBOOK_TEST_REPORT; the
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
