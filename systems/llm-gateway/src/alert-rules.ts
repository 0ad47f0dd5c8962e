/**
 * LG-16's alarms: Prometheus alerting rules over the gateway's own metrics (`metrics.ts`),
 * the same signals the breakers act on per replica — a deployment's breaker open, TTFT p95
 * high, 5xx and 429 rates per model, usage rows lost. Shipped as data and rendered as a
 * Prometheus rule file; a test checks that every series a rule reads is exported.
 *
 * @example
 * // node -e 'import("./systems/llm-gateway/src/alert-rules.ts").then((m) => console.log(m.prometheusRuleFile()))' > llm-gateway-rules.yml
 * prometheusRuleFile(); // "groups:\n  - name: llm-gateway\n    rules:\n      - alert: LlmDeploymentBreakerOpen …"
 */

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  /** How long the condition must hold, Prometheus's `for`. */
  readonly for: string;
  readonly severity: "page" | "ticket";
  readonly summary: string;
}

export const alertRules: readonly AlertRule[] = [
  {
    alert: "LlmDeploymentBreakerOpen",
    expr: "max by (deployment) (llm_gateway_destination_state) == 2",
    for: "2m",
    severity: "ticket",
    summary:
      "{{ $labels.deployment }}: the circuit breaker has been open for 2 minutes (requests go to the fallback)",
  },
  {
    alert: "LlmAllDeploymentsOpen",
    expr: "min(llm_gateway_destination_state) == 2",
    for: "1m",
    severity: "page",
    summary: "every deployment's breaker is open: requests are refused with 429",
  },
  {
    alert: "LlmTtftHigh",
    expr: "histogram_quantile(0.95, sum by (model, le) (rate(llm_gateway_ttft_seconds_bucket[5m]))) > 5",
    for: "5m",
    severity: "ticket",
    summary: "{{ $labels.model }}: time to first token p95 above 5 s",
  },
  {
    alert: "LlmUpstream5xxRate",
    expr: 'sum by (model) (rate(llm_gateway_upstream_failures_total{kind="5xx"}[5m])) / sum by (model) (rate(llm_gateway_requests_total[5m])) > 0.05',
    for: "5m",
    severity: "ticket",
    summary: "{{ $labels.model }}: more than 5% of requests met a provider 5xx",
  },
  {
    alert: "LlmRateLimited",
    expr: 'sum by (model) (rate(llm_gateway_requests_total{outcome="rate_limited"}[5m])) + sum by (model) (rate(llm_gateway_upstream_failures_total{kind="429"}[5m])) > 1',
    for: "10m",
    severity: "ticket",
    summary: "{{ $labels.model }}: more than one 429 a second (ours or the provider's) for 10 minutes",
  },
  {
    alert: "LlmUsageRowsLost",
    expr: 'increase(llm_gateway_usage_rows_total{result="lost"}[10m]) > 0',
    for: "0m",
    severity: "page",
    summary:
      "usage rows (cost accounting) could not be written; replay them from the log lines 'usage row lost'",
  },
];

/** The rules as a Prometheus rule file (YAML; every string quoted as JSON, which YAML reads). */
export function prometheusRuleFile(rules: readonly AlertRule[] = alertRules): string {
  const lines = ["groups:", "  - name: llm-gateway", "    rules:"];
  for (const rule of rules) {
    lines.push(
      `      - alert: ${rule.alert}`,
      `        expr: ${JSON.stringify(rule.expr)}`,
      `        for: ${rule.for}`,
      "        labels:",
      `          severity: ${rule.severity}`,
      "        annotations:",
      `          summary: ${JSON.stringify(rule.summary)}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

/** The gateway's series a rule reads (histogram suffixes folded to the metric's name). */
export function seriesOf(rule: AlertRule): string[] {
  const names = rule.expr.match(/llm_gateway_[a-z_]+/g) ?? [];
  return [...new Set(names.map((name) => name.replace(/_(bucket|sum|count)$/, "")))];
}
