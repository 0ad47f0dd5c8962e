/**
 * Alerting rules in Prometheus's rule-file format (YAML): `groups`, each with a `name`, an
 * optional `interval` and `rules`, each rule with `alert`, `expr` (PromQL), optional `for`,
 * `labels` and `annotations` — so an existing Prometheus rule file loads unchanged. Recording
 * rules (`record:`) are refused by name (not built). Every problem names its place
 * (`groups[0].rules[2].expr: …`), like `promtool check rules`.
 *
 * @example
 * const groups = parseRuleFile(`groups:
 *   - name: api
 *     rules:
 *       - alert: HighErrorRate
 *         expr: sum(rate(http_errors_total[5m])) > 1
 *         for: 2m
 *         labels: { severity: page }
 *         annotations: { summary: "{{ $value }} errors/s" }`, { defaultIntervalMs: 15_000 });
 */

import { parsePromDurationMs } from "@casebook/kit/prom-duration";
import { parse as parseYaml } from "yaml";
import { LABEL_NAME_PATTERN } from "./labels.ts";
import type { Expr } from "./promql-ast.ts";
import { parsePromql, typeOf } from "./promql-parser.ts";

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly ast: Expr;
  readonly forMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface RuleGroup {
  readonly name: string;
  readonly intervalMs: number;
  readonly rules: readonly AlertRule[];
}

export class RuleFileError extends Error {
  readonly field: string;
  constructor(field: string, why: string) {
    super(`${field}: ${why}`);
    this.name = "RuleFileError";
    this.field = field;
  }
}

const ALERT_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Bounds: a rule file is configuration, not data. */
export const RULE_LIMITS = { maxGroups: 1_000, maxRulesPerGroup: 1_000, maxTextChars: 4_096 } as const;

function record(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== "object" || Array.isArray(value)) throw new RuleFileError(field, "must be a map");
  const out: Record<string, string> = {};
  for (const [name, v] of Object.entries(value)) {
    if (!LABEL_NAME_PATTERN.test(name))
      throw new RuleFileError(`${field}.${name}`, "is not a valid label name");
    if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean")
      throw new RuleFileError(`${field}.${name}`, "must be a string");
    const text = String(v);
    if (text.length > RULE_LIMITS.maxTextChars) throw new RuleFileError(`${field}.${name}`, "is too long");
    out[name] = text;
  }
  return out;
}

function duration(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = typeof value === "string" ? parsePromDurationMs(value) : undefined;
  if (ms === undefined)
    throw new RuleFileError(field, `${JSON.stringify(value)} is not a duration like 30s or 5m`);
  return ms;
}

function parseRule(raw: unknown, field: string): AlertRule {
  if (typeof raw !== "object" || raw === null) throw new RuleFileError(field, "must be a map");
  const rule = raw as Record<string, unknown>;
  if (rule.record !== undefined)
    throw new RuleFileError(`${field}.record`, "recording rules are not supported");
  if (typeof rule.alert !== "string" || !ALERT_NAME.test(rule.alert))
    throw new RuleFileError(`${field}.alert`, "must be a name like HighErrorRate");
  if (typeof rule.expr !== "string" && typeof rule.expr !== "number")
    throw new RuleFileError(`${field}.expr`, "must be a PromQL expression");
  const expr = String(rule.expr);
  let ast: Expr;
  try {
    ast = parsePromql(expr);
  } catch (error) {
    throw new RuleFileError(`${field}.expr`, (error as Error).message);
  }
  const type = typeOf(ast);
  if (type !== "vector" && type !== "scalar")
    throw new RuleFileError(`${field}.expr`, `must be an instant vector or a scalar, not a ${type}`);
  for (const key of Object.keys(rule)) {
    if (!["alert", "expr", "for", "labels", "annotations", "keep_firing_for"].includes(key))
      throw new RuleFileError(`${field}.${key}`, "is not a field of an alerting rule");
  }
  if (rule.keep_firing_for !== undefined)
    throw new RuleFileError(
      `${field}.keep_firing_for`,
      "is not supported (Prometheus 2.42 has no such field)",
    );
  return {
    alert: rule.alert,
    expr,
    ast,
    forMs: duration(rule.for, `${field}.for`) ?? 0,
    labels: record(rule.labels, `${field}.labels`),
    annotations: record(rule.annotations, `${field}.annotations`),
  };
}

/** Parses and checks a whole rule file; throws RuleFileError naming the first problem. */
export function parseRuleFile(text: string, options: { defaultIntervalMs: number }): RuleGroup[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (error) {
    throw new RuleFileError("file", `not YAML: ${(error as Error).message}`);
  }
  const groups = (doc as { groups?: unknown } | null)?.groups;
  if (!Array.isArray(groups)) throw new RuleFileError("groups", "must be a list");
  if (groups.length > RULE_LIMITS.maxGroups) throw new RuleFileError("groups", "has too many groups");
  const names = new Set<string>();
  return groups.map((raw, g) => {
    const field = `groups[${g}]`;
    const group = (raw ?? {}) as Record<string, unknown>;
    if (typeof group.name !== "string" || group.name === "")
      throw new RuleFileError(`${field}.name`, "is required");
    if (names.has(group.name)) throw new RuleFileError(`${field}.name`, `${group.name} is used twice`);
    names.add(group.name);
    if (!Array.isArray(group.rules)) throw new RuleFileError(`${field}.rules`, "must be a list");
    if (group.rules.length > RULE_LIMITS.maxRulesPerGroup)
      throw new RuleFileError(`${field}.rules`, "too many rules");
    const intervalMs = duration(group.interval, `${field}.interval`) ?? options.defaultIntervalMs;
    if (intervalMs <= 0) throw new RuleFileError(`${field}.interval`, "must be positive");
    return {
      name: group.name,
      intervalMs,
      rules: group.rules.map((rule, r) => parseRule(rule, `${field}.rules[${r}]`)),
    };
  });
}
