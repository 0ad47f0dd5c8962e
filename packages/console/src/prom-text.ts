/**
 * The Prometheus text exposition format (0.0.4), read into samples: what the console scrapes
 * from each system's `/metrics`. Comments and type lines are skipped; a line that does not
 * parse is skipped too (a scrape is a view, not a contract test) and counted, so a test can
 * hold a system's output to zero. Bounded by `maxSamples`: a runaway label set cannot grow
 * the console's memory without limit.
 *
 * @example
 * parsePromText('ratelimit_decisions_total{policy="login",outcome="allowed"} 42\n').samples;
 * // [{ name: "ratelimit_decisions_total", labels: { policy: "login", outcome: "allowed" }, value: 42 }]
 */

export interface Sample {
  name: string;
  labels: Readonly<Record<string, string>>;
  value: number;
}

export interface ParsedScrape {
  samples: Sample[];
  /** Lines that were neither comments, blank, nor samples. */
  skippedLines: number;
}

/** Far above any system's exposition today (a few hundred series). */
export const defaultMaxSamples = 20_000;

const linePattern = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+-?\d+)?$/;
const labelPattern = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*/y;

export function parsePromText(text: string, maxSamples = defaultMaxSamples): ParsedScrape {
  const samples: Sample[] = [];
  let skippedLines = 0;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseLine(line);
    if (sample === undefined) skippedLines++;
    else if (samples.length < maxSamples) samples.push(sample);
  }
  return { samples, skippedLines };
}

function parseLine(line: string): Sample | undefined {
  const match = linePattern.exec(line);
  if (match === null) return undefined;
  const [, name, labelText, valueText] = match as unknown as [string, string, string | undefined, string];
  const labels = labelText === undefined ? {} : parseLabels(labelText.slice(1, -1));
  if (labels === undefined) return undefined;
  const value = parseValue(valueText);
  return value === undefined ? undefined : { name, labels, value };
}

function parseLabels(body: string): Record<string, string> | undefined {
  const labels: Record<string, string> = {};
  labelPattern.lastIndex = 0;
  while (labelPattern.lastIndex < body.length) {
    const at = labelPattern.lastIndex;
    const match = labelPattern.exec(body);
    if (match === null || match.index !== at) return undefined;
    labels[match[1]!] = match[2]!.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));
  }
  return labels;
}

function parseValue(text: string): number | undefined {
  if (text === "+Inf") return Number.POSITIVE_INFINITY;
  if (text === "-Inf") return Number.NEGATIVE_INFINITY;
  if (text === "NaN") return Number.NaN;
  const value = Number(text);
  return Number.isNaN(value) ? undefined : value;
}
