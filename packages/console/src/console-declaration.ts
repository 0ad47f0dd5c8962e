/**
 * What a system offers the console, declared by the system itself: the `console` block of the
 * `casebook` field in its package.json (the manifest the CLI reads). The console knows no system
 * by name and imports none of their code: a page is this block, read over the system's own
 * `/metrics`. Validation collects every problem, each naming the file and field.
 *
 * @example
 * // systems/rate-limiter/package.json
 * "console": {
 *   "summary": "Token bucket, sliding window and GCRA over one Redis script a policy…",
 *   "plots": [{ "title": "Decisions per second, by outcome", "unit": "decisions/s",
 *     "series": [{ "metric": "ratelimit_decisions_total", "fn": "rate", "by": "outcome" }] }]
 * }
 */

/** How a series is computed from the window of scrapes. */
export const seriesFns = ["rate", "value", "quantile"] as const;
export type SeriesFn = (typeof seriesFns)[number];

export interface SeriesDeclaration {
  /** The metric's name as exposed (`ratelimit_decisions_total`; a histogram's base name for quantile). */
  metric: string;
  /** `rate`: per-second increase of a counter; `value`: a gauge; `quantile`: from a histogram's buckets. */
  fn: SeriesFn;
  /** For `quantile`: 0 < q < 1. */
  q?: number;
  /** One line per value of this label; without it, one line summed over every sample. */
  by?: string;
  /** Only samples with these label values. */
  where?: Record<string, string>;
  /** The legend of a single line (without `by`). */
  label?: string;
  /** Multiplies every value (1000 turns seconds into ms). */
  scale?: number;
}

export interface PlotDeclaration {
  /** Plain words: "Deliveries finished per second, by state". */
  title: string;
  /** The y axis' unit: "deliveries/s", "ms", "keys". */
  unit: string;
  series: SeriesDeclaration[];
}

export interface PortDeclaration {
  /** "RESP". */
  name: string;
  port: number;
}

/** A scenario the system runs over its own API (`POST /v1/scenarios/{id}/runs`, infra's scenario-runs). */
export interface ScenarioDeclaration {
  /** `one-key-twenty-requests`. */
  id: string;
  title: string;
  /** What it shows, in one line. */
  line: string;
}

export interface ConsoleDeclaration {
  /** What it is and the mechanism, in a few lines. */
  summary: string;
  /** Ports beside the HTTP one (the cache's RESP port). */
  ports: PortDeclaration[];
  plots: PlotDeclaration[];
  scenarios: ScenarioDeclaration[];
}

/** Bounds on what one system may declare: a page stays readable, a scrape cheap. */
export const maxPlots = 12;
export const maxSeriesPerPlot = 8;
export const maxScenarios = 8;
const scenarioIdPattern = /^[a-z][a-z0-9-]{0,60}$/;
const metricPattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const labelPattern = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export interface DeclarationResult {
  declaration?: ConsoleDeclaration;
  problems: string[];
}

/** Validates `casebook.console` of the manifest in `file`; absent is `undefined` with no problem. */
export function parseConsoleDeclaration(raw: unknown, file: string): DeclarationResult {
  if (raw === undefined) return { problems: [] };
  const problems: string[] = [];
  const report = (field: string, what: string) => problems.push(`${file}: field "${field}" ${what}`);
  const base = "casebook.console";
  if (!isRecord(raw)) {
    report(base, `must be an object like {"summary": …, "plots": […]}, got ${show(raw)}`);
    return { problems };
  }
  const summary = typeof raw.summary === "string" ? raw.summary.trim() : "";
  if (summary === "") report(`${base}.summary`, `must be a non-empty string, got ${show(raw.summary)}`);
  const ports = checkPorts(raw.ports, `${base}.ports`, report);
  const plots = checkList(raw.plots, `${base}.plots`, maxPlots, report).flatMap((item, i) => {
    const plot = checkPlot(item, `${base}.plots[${i}]`, report);
    return plot === undefined ? [] : [plot];
  });
  const scenarios = checkScenarios(raw.scenarios, `${base}.scenarios`, report);
  if (problems.length > 0) return { problems };
  return { declaration: { summary, ports, plots, scenarios }, problems };
}

type Report = (field: string, what: string) => void;

function checkPlot(raw: unknown, field: string, report: Report): PlotDeclaration | undefined {
  if (!isRecord(raw)) {
    report(field, `must be an object with title, unit and series, got ${show(raw)}`);
    return undefined;
  }
  const title = nonEmpty(raw.title, `${field}.title`, report);
  const unit = nonEmpty(raw.unit, `${field}.unit`, report);
  const series = checkList(raw.series, `${field}.series`, maxSeriesPerPlot, report).flatMap((item, i) => {
    const one = checkSeries(item, `${field}.series[${i}]`, report);
    return one === undefined ? [] : [one];
  });
  return { title, unit, series };
}

function checkSeries(raw: unknown, field: string, report: Report): SeriesDeclaration | undefined {
  if (!isRecord(raw)) {
    report(field, `must be an object like {"metric": …, "fn": "rate"}, got ${show(raw)}`);
    return undefined;
  }
  const metric = typeof raw.metric === "string" && metricPattern.test(raw.metric) ? raw.metric : "";
  if (metric === "") report(`${field}.metric`, `must be a Prometheus metric name, got ${show(raw.metric)}`);
  const fn = seriesFns.find((f) => f === raw.fn);
  if (fn === undefined)
    report(`${field}.fn`, `must be one of ${seriesFns.map(show).join(", ")}, got ${show(raw.fn)}`);
  const series: SeriesDeclaration = { metric, fn: fn ?? "value" };
  if (fn === "quantile" || raw.q !== undefined) {
    if (fn !== "quantile" || typeof raw.q !== "number" || !(raw.q > 0 && raw.q < 1)) {
      report(
        `${field}.q`,
        `must be a number between 0 and 1, with "fn": "quantile" only, got ${show(raw.q)}`,
      );
    } else series.q = raw.q;
  }
  if (raw.by !== undefined) {
    if (typeof raw.by !== "string" || !labelPattern.test(raw.by))
      report(`${field}.by`, `must be a label name, got ${show(raw.by)}`);
    else series.by = raw.by;
  }
  if (raw.where !== undefined) {
    const ok =
      isRecord(raw.where) &&
      Object.entries(raw.where).every(([k, v]) => labelPattern.test(k) && typeof v === "string");
    if (!ok) report(`${field}.where`, `must be an object of label: "value" strings, got ${show(raw.where)}`);
    else series.where = raw.where as Record<string, string>;
  }
  if (raw.label !== undefined) series.label = nonEmpty(raw.label, `${field}.label`, report);
  if (raw.scale !== undefined) {
    if (typeof raw.scale !== "number" || !Number.isFinite(raw.scale) || raw.scale <= 0) {
      report(`${field}.scale`, `must be a positive number, got ${show(raw.scale)}`);
    } else series.scale = raw.scale;
  }
  return series;
}

function checkScenarios(raw: unknown, field: string, report: Report): ScenarioDeclaration[] {
  if (raw === undefined) return [];
  return checkList(raw, field, maxScenarios, report).flatMap((item, i) => {
    const at = `${field}[${i}]`;
    if (!isRecord(item)) {
      report(at, `must be an object like {"id": …, "title": …, "line": …}, got ${show(item)}`);
      return [];
    }
    const id = typeof item.id === "string" && scenarioIdPattern.test(item.id) ? item.id : "";
    if (id === "") report(`${at}.id`, `must be lower-case words and dashes, got ${show(item.id)}`);
    const title = nonEmpty(item.title, `${at}.title`, report);
    const line = nonEmpty(item.line, `${at}.line`, report);
    return [{ id, title, line }];
  });
}

function checkPorts(raw: unknown, field: string, report: Report): PortDeclaration[] {
  if (raw === undefined) return [];
  return checkList(raw, field, 4, report).flatMap((item, i) => {
    const ok =
      isRecord(item) &&
      typeof item.name === "string" &&
      item.name.trim() !== "" &&
      Number.isInteger(item.port) &&
      (item.port as number) > 0 &&
      (item.port as number) < 65_536;
    if (!ok) {
      report(`${field}[${i}]`, `must be like {"name": "RESP", "port": 7000}, got ${show(item)}`);
      return [];
    }
    return [{ name: (item.name as string).trim(), port: item.port as number }];
  });
}

function checkList(raw: unknown, field: string, max: number, report: Report): unknown[] {
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > max) {
    report(field, `must be a list of 1 to ${max} items, got ${show(raw)}`);
    return [];
  }
  return raw;
}

function nonEmpty(raw: unknown, field: string, report: Report): string {
  if (typeof raw === "string" && raw.trim() !== "") return raw.trim();
  report(field, `must be a non-empty string, got ${show(raw)}`);
  return "";
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function show(value: unknown): string {
  const text = value === undefined ? "nothing" : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
