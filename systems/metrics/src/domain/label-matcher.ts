/**
 * Label matchers, the four of PromQL: `=`, `!=`, `=~`, `!~`. Regexes are fully anchored
 * (`^(?:re)$`), as Prometheus anchors them, and a label a series lacks counts as the empty
 * value — so `{env!="prod"}` also selects series with no `env`, and `{env=~".*"}` selects
 * every series. Compiled once per matcher.
 *
 * @example
 * const m = labelMatcher("=~", "job", "api|web");
 * m.matches("api");  // true
 * m.matches("apix"); // false: anchored
 * matchesSeries([m], [["__name__", "up"], ["job", "web"]]); // true
 */
import { type Labels, labelValue } from "./labels.ts";

export type MatchType = "=" | "!=" | "=~" | "!~";

export interface LabelMatcher {
  readonly type: MatchType;
  readonly name: string;
  readonly value: string;
  matches(value: string): boolean;
}

/** Whether a series' labels pass every matcher, a label it lacks read as the empty value. */
export function matchesSeries(matchers: readonly LabelMatcher[], labels: Labels): boolean {
  return matchers.every((m) => m.matches(labelValue(labels, m.name) ?? ""));
}

/** Thrown for a regex JavaScript cannot compile; the API turns it into a 400 naming the query. */
export class MatcherRegexError extends Error {}

export function labelMatcher(type: MatchType, name: string, value: string): LabelMatcher {
  if (type === "=") return { type, name, value, matches: (v) => v === value };
  if (type === "!=") return { type, name, value, matches: (v) => v !== value };
  const re = compileAnchored(value);
  return type === "=~"
    ? { type, name, value, matches: (v) => re.test(v) }
    : { type, name, value, matches: (v) => !re.test(v) };
}

/**
 * RE2's inline flags `(?i)` (to the end of the enclosing group) become JavaScript's scoped
 * modifiers `(?i:…)`; other syntax is shared by the two for what PromQL users write.
 */
export function goRegexToJs(source: string): string {
  let out = "";
  const closers: number[] = [0];
  let inClass = false;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === "\\") {
      out += c + (source[i + 1] ?? "");
      i++;
      continue;
    }
    if (inClass) {
      if (c === "]") inClass = false;
      out += c;
      continue;
    }
    if (c === "[") {
      inClass = true;
      out += c;
      continue;
    }
    const flags = c === "(" ? /^\(\?([imsU]+)\)/.exec(source.slice(i)) : null;
    if (flags) {
      if (flags[1]!.includes("U")) throw new MatcherRegexError("the (?U) flag is not supported");
      out += `(?${flags[1]}:`;
      closers[closers.length - 1]!++;
      i += flags[0].length - 1;
      continue;
    }
    if (c === "(") {
      closers.push(0);
      out += c;
      continue;
    }
    if (c === ")") {
      out += ")".repeat(closers.pop() ?? 0) + c;
      if (closers.length === 0) closers.push(0);
      continue;
    }
    out += c;
  }
  return out + ")".repeat(closers.reduce((a, b) => a + b, 0));
}

/** `^(?:re)$` as Prometheus 2.42 anchors it (no (?s): `.` stops at a newline, as in RE2). */
export function compileAnchored(value: string): RegExp {
  try {
    return new RegExp(`^(?:${goRegexToJs(value)})$`);
  } catch (error) {
    if (error instanceof MatcherRegexError) throw error;
    throw new MatcherRegexError(`invalid regular expression ${JSON.stringify(value)}`, { cause: error });
  }
}

export function formatMatcher(m: LabelMatcher): string {
  return `${m.name}${m.type}${JSON.stringify(m.value)}`;
}
