/**
 * The Prometheus text exposition format (0.0.4), read into samples: what metrics' scraper and
 * the console read from every service's `/metrics`. One parser for both (it was the console's).
 *
 * What the format holds, and how it is read:
 * - `# HELP name text` (escapes `\\` and `\n`) and `# TYPE name counter|gauge|histogram|summary|untyped`
 *   give each family its type; other comments are skipped;
 * - a sample is `name{label="value",…} value [timestamp]`: label values escape `\\`, `\"` and
 *   `\n`; a trailing comma is allowed; a `}` or `,` inside quotes is part of the value;
 * - values are floats, `+Inf`/`-Inf`/`NaN` (any case, as Go's ParseFloat reads them); the
 *   optional timestamp is integer milliseconds;
 * - a histogram's `_bucket` needs a float `le` (`+Inf` included), a summary's quantile line a
 *   float `quantile`.
 *
 * A line that does not parse is skipped and described in `problems` (the first few): the
 * console shows what it could read, metrics' scraper fails the whole scrape as Prometheus does.
 * Bounded by `maxSamples`: past it `truncated` is set and nothing more is kept, so a runaway
 * label set cannot grow a reader's memory without limit (Prometheus's `sample_limit`).
 *
 * @example
 * const scrape = parsePromText('# TYPE d_total counter\nd_total{outcome="allowed"} 42 1700000000000\n');
 * scrape.samples; // [{ name: "d_total", labels: { outcome: "allowed" }, value: 42, timestampMs: 1700000000000 }]
 * scrape.types.get("d_total"); // "counter"
 */

export const metricTypes = ["counter", "gauge", "histogram", "summary", "untyped"] as const;
export type MetricType = (typeof metricTypes)[number];

export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
  /** The exposed timestamp, when the line carries one (integer Unix ms). */
  timestampMs?: number;
}

export interface ParseProblem {
  /** 1-based line number. */
  line: number;
  reason: string;
}

export interface ParsedScrape {
  samples: Sample[];
  /** Family name → its `# TYPE`. */
  types: Map<string, MetricType>;
  /** Family name → its `# HELP`, unescaped. */
  help: Map<string, string>;
  /** Lines that were neither comments, blank, nor samples. */
  skippedLines: number;
  /** Why, for the first `maxProblems` of them. */
  problems: ParseProblem[];
  /** More than `maxSamples` samples were exposed; the rest were not kept. */
  truncated: boolean;
}

/** Far above any system's exposition today (a few hundred series). */
export const defaultMaxSamples = 20_000;
/** Problems described per scrape; the rest only counted. */
export const maxProblems = 10;

const namePattern = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const labelNamePattern = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const timestampPattern = /^-?\d+$/;

export function parsePromText(text: string, maxSamples = defaultMaxSamples): ParsedScrape {
  const scrape: ParsedScrape = {
    samples: [],
    types: new Map(),
    help: new Map(),
    skippedLines: 0,
    problems: [],
    truncated: false,
  };
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === "") continue;
    const result = line.startsWith("#") ? readComment(line, scrape) : readSample(line, scrape.types);
    if (typeof result === "string") {
      scrape.skippedLines++;
      if (scrape.problems.length < maxProblems) scrape.problems.push({ line: i + 1, reason: result });
    } else if (result !== undefined) {
      if (scrape.samples.length < maxSamples) scrape.samples.push(result);
      else scrape.truncated = true;
    }
  }
  return scrape;
}

/** The `# TYPE` of the family `name` belongs to (`x_bucket` → x's histogram), or "untyped". */
export function typeOfSample(name: string, types: ReadonlyMap<string, MetricType>): MetricType {
  const own = types.get(name);
  if (own !== undefined) return own;
  const family = familyOf(name, types);
  return family === undefined ? "untyped" : types.get(family)!;
}

function familyOf(name: string, types: ReadonlyMap<string, MetricType>): string | undefined {
  for (const suffix of ["_bucket", "_sum", "_count"]) {
    if (!name.endsWith(suffix)) continue;
    const base = name.slice(0, -suffix.length);
    const type = types.get(base);
    if (type === "histogram" || (type === "summary" && suffix !== "_bucket")) return base;
  }
  return undefined;
}

/** A HELP or TYPE line is recorded; other comments are nothing; a malformed TYPE is a problem. */
function readComment(line: string, scrape: ParsedScrape): string | undefined {
  const match = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
  if (match === null) return undefined;
  const [, keyword, name, rest = ""] = match as unknown as [string, string, string, string | undefined];
  if (!namePattern.test(name) || namePattern.exec(name)![0] !== name)
    return `${keyword} names no metric: ${name}`;
  if (keyword === "HELP") {
    scrape.help.set(name, unescapeText(rest, false));
    return undefined;
  }
  const type = metricTypes.find((t) => t === rest.trim());
  if (type === undefined) return `TYPE ${name} is not one of ${metricTypes.join(", ")}: ${rest}`;
  scrape.types.set(name, type);
  return undefined;
}

function readSample(line: string, types: ReadonlyMap<string, MetricType>): Sample | string {
  const name = namePattern.exec(line)?.[0];
  if (name === undefined) return "no metric name";
  let at = name.length;
  let labels: Record<string, string> = {};
  if (line[at] === "{") {
    const read = readLabels(line, at + 1);
    if (typeof read === "string") return read;
    labels = read.labels;
    at = read.end;
  }
  const fields = line.slice(at).trim().split(/\s+/);
  if (fields.length === 0 || fields[0] === "" || fields.length > 2)
    return "expected a value and an optional timestamp";
  const value = parseFloatValue(fields[0]!);
  if (value === undefined) return `value ${fields[0]} is not a float`;
  const sample: Sample = { name, labels, value };
  if (fields[1] !== undefined) {
    if (!timestampPattern.test(fields[1]) || !Number.isSafeInteger(Number(fields[1])))
      return `timestamp ${fields[1]} is not integer milliseconds`;
    sample.timestampMs = Number(fields[1]);
  }
  return checkFamilyLabels(sample, types) ?? sample;
}

/** Labels from `{`'s next character up to its `}`: the labels and the index after the brace. */
function readLabels(line: string, start: number): { labels: Record<string, string>; end: number } | string {
  const labels: Record<string, string> = {};
  let at = start;
  for (;;) {
    at = skipSpaces(line, at);
    if (line[at] === "}") return { labels, end: at + 1 };
    const name = labelNamePattern.exec(line.slice(at))?.[0];
    if (name === undefined) return `label name expected at column ${at + 1}`;
    at = skipSpaces(line, at + name.length);
    if (line[at] !== "=" || line[skipSpaces(line, at + 1)] !== '"') return `label ${name} needs ="value"`;
    at = skipSpaces(line, at + 1) + 1;
    let raw = "";
    while (at < line.length && line[at] !== '"') {
      if (line[at] === "\\" && at + 1 < line.length) {
        raw += line.slice(at, at + 2);
        at += 2;
      } else raw += line[at++];
    }
    if (at >= line.length) return `label ${name}'s value is not closed`;
    if (Object.hasOwn(labels, name)) return `label ${name} appears twice`;
    labels[name] = unescapeText(raw, true);
    at = skipSpaces(line, at + 1);
    if (line[at] === ",") at++;
    else if (line[at] !== "}") return `"," or "}" expected after label ${name}`;
  }
}

function checkFamilyLabels(sample: Sample, types: ReadonlyMap<string, MetricType>): string | undefined {
  const type = typeOfSample(sample.name, types);
  if (type === "histogram" && sample.name.endsWith("_bucket")) {
    const le = sample.labels.le;
    if (le === undefined || parseFloatValue(le) === undefined)
      return `${sample.name} needs a float "le" label`;
  }
  if (type === "summary" && types.has(sample.name) && sample.labels.quantile !== undefined) {
    if (parseFloatValue(sample.labels.quantile) === undefined)
      return `${sample.name}'s "quantile" label is not a float`;
  }
  return undefined;
}

/** A float as Go's ParseFloat reads the format's values: `+Inf`, `-inf`, `NaN`, `1e3`, `0x1p-2` excluded. */
export function parseFloatValue(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (lower === "+inf" || lower === "inf" || lower === "+infinity" || lower === "infinity")
    return Number.POSITIVE_INFINITY;
  if (lower === "-inf" || lower === "-infinity") return Number.NEGATIVE_INFINITY;
  if (lower === "nan") return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return undefined;
  return Number(text);
}

/** `\\` → `\`, `\n` → newline, and in label values `\"` → `"`; any other escape is kept as written. */
function unescapeText(text: string, quotes: boolean): string {
  return text.replace(/\\(.)/g, (whole, c: string) => {
    if (c === "n") return "\n";
    if (c === "\\") return "\\";
    if (c === '"' && quotes) return '"';
    return whole;
  });
}

function skipSpaces(line: string, at: number): number {
  let i = at;
  while (line[i] === " " || line[i] === "\t") i++;
  return i;
}
