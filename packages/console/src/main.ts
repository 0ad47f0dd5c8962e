/**
 * Composition root of the web console: config → the front end built if stale (Vite, bounded)
 * → the systems found as the CLI finds them → a scraper of their /readyz and /metrics (and,
 * when casebook up started metrics, its query API as the plots' first source) → the
 * service on 127.0.0.1:8100 with the JSON API and the front end under /app/ (a browser
 * opening / is sent there). `casebook up` starts it first and tells it where each system runs.
 *
 * @example
 * // npm start                 (the console first, at http://127.0.0.1:8100, then every system)
 * // node packages/console/src/main.ts   (alone: systems expected on their manifest ports)
 */
import { join } from "node:path";
import { sharedDir } from "@casebook/cli/architecture-map";
import { findRepoRoot } from "@casebook/cli/repo-root";
import { requireCredentialsBeyondLoopback } from "@casebook/infra/http/loopback-guard";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { startService } from "@casebook/infra/http/start-service";
import { configSchema, loadConsoleConfig } from "./console-config.ts";
import { consoleErrors } from "./console-errors.ts";
import { registerConsoleRoutes } from "./console-routes.ts";
import { MetricsSource } from "./metrics-source.ts";
import { registerScenarioProxy } from "./scenario-proxy.ts";
import { registerStaticAssets } from "./static-assets.ts";
import { parseStarted, readCatalog } from "./system-catalog.ts";
import { SystemScraper } from "./system-scraper.ts";
import { TestReportFile } from "./test-report-file.ts";
import { distDir, ensureWebBuilt } from "./web-build.ts";

export interface RunningConsole {
  readonly url: string;
  readonly service: Service;
  readonly scraper: SystemScraper;
  close(): Promise<void>;
}

export interface ConsoleMainOptions {
  /** Skip the front-end build check (tests that build once, up front). */
  skipWebBuild?: boolean;
}

export async function main(
  env: NodeJS.ProcessEnv = process.env,
  options: ConsoleMainOptions = {},
): Promise<RunningConsole> {
  const config = loadConsoleConfig(env);
  requireCredentialsBeyondLoopback({
    host: config.host,
    credentialsSet: config.adminToken !== undefined,
    setting: "CASEBOOK_CONSOLE_ADMIN_TOKEN",
    credential: "a secret of 16 characters or more",
  });
  const root = findRepoRoot(import.meta.dirname, env);
  const buildError = options.skipWebBuild ? undefined : await buildFrontEnd();
  const catalog = readCatalog({ root, started: parseStarted(config.systems) });
  const report = new TestReportFile(config.testReport ?? join(root, ".casebook-data", "test-report.xml"));
  let scraper: SystemScraper | undefined;
  const { url, service } = await startService({
    service: {
      name: "console",
      version: "0.1.0",
      log: { level: config.logLevel },
      errors: [consoleErrors],
      browserHome: "app/",
      description: "Casebook's web console: every system's state, live plots and claims",
    },
    build: async ({ service }) => {
      scraper = new SystemScraper(catalog.systems, {
        intervalMs: config.scrapeIntervalMs,
        windowScrapes: config.windowScrapes,
        log: service.log,
      });
      registerStaticAssets(service.app, { dir: distDir });
      // Issue 23: with metrics running, the plots read its query API; the window stays as the fallback.
      const metrics =
        config.metricsUrl === undefined
          ? undefined
          : new MetricsSource({
              url: config.metricsUrl,
              apiKey: config.metricsApiKey ?? "",
              intervalMs: config.scrapeIntervalMs,
              spanMs: config.scrapeIntervalMs * config.windowScrapes,
              log: service.log,
            });
      if (metrics !== undefined) {
        metrics.start();
        service.onClose(() => metrics.stop());
      }
      registerConsoleRoutes(service.app, {
        catalog,
        scraper,
        metrics,
        onMetricsFailed: (error) =>
          service.log.warn({ err: error }, "console: plots from metrics failed; the window drew them"),
        testReport: () => report.read(),
        sharedDir: sharedDir(root),
        root,
      });
      registerScenarioProxy(service.app, { catalog, adminToken: config.adminToken });
      const running = scraper;
      running.start();
      service.onClose(() => running.stop());
    },
    listen: { port: config.port, host: config.host },
    listening: () => ({ systems: catalog.systems.filter((s) => s.started).length }),
  });
  if (buildError !== undefined) service.log.error({ err: buildError }, "console front end not built");
  for (const problem of catalog.problems) service.log.warn({ problem }, "console declaration ignored");
  return { url, service, scraper: scraper!, close: () => service.close() };
}

/** The build's failure is logged, not fatal: the API and every system still run without the page. */
async function buildFrontEnd(): Promise<Error | undefined> {
  try {
    await ensureWebBuilt({ log: (line) => process.stderr.write(`${line}\n`) });
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

if (import.meta.main) {
  await runServiceEntry({
    name: "console",
    summary: "the web console: every system's state, live plots of its /metrics, its claims",
    schema: configSchema,
    usage: ["npm start   (casebook up starts it first)", "node packages/console/src/main.ts"],
    start: async () => (await main()).service,
  });
}
