/**
 * The console's JSON API, read by its own front end (and by anyone with curl):
 *
 * - `GET /api/systems`: every system with its state from `/readyz`, address and ports, design
 *   in one line, links (README, design text section, API reference) and its claims' counts;
 * - `GET /api/systems/:name`: the same, plus its declared plots and each claim's result;
 * - `GET /api/systems/:name/plots`: the plots' data, from the metrics system's query API when it
 *   runs and scrapes that system (`source: "metrics"`), else over the console's own window of
 *   scrapes (`source: "window"`; each declared plot empty for a system this console does not scrape);
 * - `GET /api/systems/:name/readme`, `/design`: its README and its design text's section.
 *
 * @example
 * registerConsoleRoutes(service.app, { catalog, scraper, testReport: () => report.read(), sharedDir, root });
 */
import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { consoleErrors } from "./console-errors.ts";
import { designSection } from "./design-text.ts";
import type { MetricsSource } from "./metrics-source.ts";
import type { Catalog, CatalogSystem } from "./system-catalog.ts";
import type { SystemScraper } from "./system-scraper.ts";
import { type ClaimResult, claimResults, type TestReport } from "./test-report.ts";

export interface ConsoleRoutesOptions {
  catalog: Catalog;
  scraper: SystemScraper;
  /** Metrics' query API, when `casebook up` started metrics (undefined: the window only). */
  metrics?: MetricsSource | undefined;
  /** Told when metrics was asked and failed (the plots then come from the window). */
  onMetricsFailed?: (error: unknown) => void;
  /** The last test run's report (re-read when its file changed). */
  testReport(): TestReport;
  sharedDir: string;
  root: string;
}

const nameParams = {
  type: "object",
  required: ["name"],
  properties: { name: { type: "string", pattern: "^[a-z][a-z0-9-]{0,40}$" } },
} as const;

export function registerConsoleRoutes(app: FastifyInstance, options: ConsoleRoutesOptions): void {
  const find = (name: string): CatalogSystem => {
    const system = options.catalog.systems.find((s) => s.name === name);
    if (system === undefined) throw consoleErrors.create("CONSOLE_SYSTEM_NOT_FOUND", { fields: { name } });
    return system;
  };
  const claimsOf = (system: CatalogSystem) => claimResults(system.claims, options.testReport(), options.root);
  const summary = (system: CatalogSystem) => describeSystem(system, options.scraper, claimsOf(system));

  app.get(
    "/api/systems",
    { schema: { summary: "Every system, its state, address, links and claims' counts" } },
    async () => {
      const report = options.testReport();
      return {
        systems: options.catalog.systems.map(summary),
        problems: options.catalog.problems,
        testReport: {
          writtenAt: report.writtenAtMs === undefined ? null : new Date(report.writtenAtMs).toISOString(),
        },
      };
    },
  );

  app.get<{ Params: { name: string } }>(
    "/api/systems/:name",
    {
      schema: {
        summary: "One system: state, links, declared plots and each claim's last result",
        params: nameParams,
      },
    },
    async (request) => {
      const system = find(request.params.name);
      const claims = claimsOf(system);
      return {
        ...describeSystem(system, options.scraper, claims),
        plots: (system.declaration?.plots ?? []).map(({ title, unit }) => ({ title, unit })),
        scenarios: system.declaration?.scenarios ?? [],
        claims,
      };
    },
  );

  app.get<{ Params: { name: string } }>(
    "/api/systems/:name/plots",
    {
      schema: {
        summary:
          "The system's declared plots, from metrics' query API when it scrapes the system, else the console's window",
        params: nameParams,
      },
    },
    async (request) => {
      const system = find(request.params.name);
      const window = options.scraper.window(system.name);
      const plots = system.declaration?.plots ?? [];
      const metrics = options.metrics;
      if (metrics?.serves(system.name)) {
        try {
          return {
            source: "metrics",
            plots: await Promise.all(plots.map((plot) => metrics.plot(system.name, plot))),
          };
        } catch (error) {
          options.onMetricsFailed?.(error);
        }
      }
      // A system this console does not scrape (not launched with it) still shows what it declares: empty plots.
      const empty = ({ title, unit }: { title: string; unit: string }) => ({
        title,
        unit,
        times: [],
        lines: [],
      });
      return {
        source: "window",
        plots: plots.map((plot) => (window === undefined ? empty(plot) : window.plot(plot))),
      };
    },
  );

  app.get<{ Params: { name: string } }>(
    "/api/systems/:name/readme",
    { schema: { summary: "The system's README (markdown, as text)", params: nameParams } },
    async (request, reply) => {
      const system = find(request.params.name);
      if (system.readme === undefined)
        throw consoleErrors.create("CONSOLE_TEXT_NOT_FOUND", { fields: { name: system.name } });
      return reply.type("text/plain; charset=utf-8").send(readFileSync(system.readme, "utf8"));
    },
  );

  app.get<{ Params: { name: string } }>(
    "/api/systems/:name/design",
    {
      schema: {
        summary: "The design text's section for the system (Portuguese, as text)",
        params: nameParams,
      },
    },
    async (request, reply) => {
      const system = find(request.params.name);
      const section = designSection(options.sharedDir, system.seed);
      if (section === undefined)
        throw consoleErrors.create("CONSOLE_TEXT_NOT_FOUND", { fields: { name: system.name } });
      return reply
        .type("text/plain; charset=utf-8")
        .send(`${section.file}, ${system.seed}\n\n${section.text}\n`);
    },
  );
}

function describeSystem(system: CatalogSystem, scraper: SystemScraper, claims: readonly ClaimResult[]) {
  const count = (status: ClaimResult["status"]) => claims.filter((c) => c.status === status).length;
  return {
    name: system.name,
    title: system.title,
    status: system.status,
    started: system.started,
    health: system.started
      ? scraper.health(system.name)
      : { state: "down", detail: "not started by casebook up" },
    url: system.url,
    ports: system.ports,
    summary: system.declaration?.summary ?? null,
    seed: system.seed ?? null,
    links: {
      page: `#/systems/${system.name}`,
      readme: system.readme === undefined ? null : `/api/systems/${system.name}/readme`,
      design: system.seed === undefined ? null : `/api/systems/${system.name}/design`,
      docs: `${system.url}/docs`,
      metrics: `${system.url}/metrics`,
    },
    claimCounts: {
      total: claims.length,
      pass: count("pass"),
      fail: count("fail"),
      skipped: count("skipped"),
      notRun: count("not run"),
    },
  };
}
