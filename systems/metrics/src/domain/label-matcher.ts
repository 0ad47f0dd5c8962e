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
 */

export type MatchType = "=" | "!=" | "=~" | "!~";

export interface LabelMatcher {
  readonly type: MatchType;
  readonly name: string;
  readonly value: string;
  matches(value: string): boolean;
}

/** Thrown for a regex JavaScript cannot compile; the API turns it into a 400 naming the query. */
export class MatcherRegexError extends Error {}

export function labelMatcher(type: MatchType, name: string, value: string): LabelMatcher {
  if (type === "=") return { type, name, value, matches: (v) => v === value };
  if (type === "!=") return { type, name, value, matches: (v) => v !== value };
  let re: RegExp;
  try {
    // `s`: RE2 in Prometheus compiles with (?s), so `.` also matches a newline.
    re = new RegExp(`^(?:${value})$`, "s");
  } catch (error) {
    throw new MatcherRegexError(`invalid regular expression ${JSON.stringify(value)}`, { cause: error });
  }
  return type === "=~"
    ? { type, name, value, matches: (v) => re.test(v) }
    : { type, name, value, matches: (v) => !re.test(v) };
}

export function formatMatcher(m: LabelMatcher): string {
  return `${m.name}${m.type}${JSON.stringify(m.value)}`;
}
