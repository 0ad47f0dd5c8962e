/**
 * Prometheus's rule-file format as the evaluator reads it: a real-shaped file loads (groups,
 * interval, expr, for, labels, annotations); every bad input is refused naming its place;
 * recording rules are refused by name. The alert state machine on its own: pending until
 * `for:` has elapsed, firing re-sent only after `resendMs`, resolved told once.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseRuleFile, RuleFileError } from "../src/domain/alert-rules.ts";
import { AlertRuleState, expandTemplate } from "../src/domain/alert-state.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";

const FILE = `groups:
  - name: api
    interval: 30s
    rules:
      - alert: HighErrorRate
        expr: sum by (job) (rate(http_errors_total[5m])) > 1
        for: 2m
        labels: { severity: page }
        annotations:
          summary: "{{ $labels.job }} fails {{ $value }}/s"
  - name: defaults
    rules:
      - alert: Down
        expr: up == 0`;

test("MT-08 a Prometheus rule file loads: groups, interval, expr, for, labels, annotations", () => {
  const [api, defaults] = parseRuleFile(FILE, { defaultIntervalMs: 15_000 });
  assert.equal(api!.name, "api");
  assert.equal(api!.intervalMs, 30_000);
  const rule = api!.rules[0]!;
  assert.equal(rule.alert, "HighErrorRate");
  assert.equal(rule.forMs, 120_000);
  assert.deepEqual(rule.labels, { severity: "page" });
  assert.equal(defaults!.intervalMs, 15_000);
  assert.equal(defaults!.rules[0]!.forMs, 0);
});

test("MT-08 a bad rule file is refused naming the field", () => {
  const cases: Array<[string, string]> = [
    ["groups: 3", "groups"],
    ["groups:\n  - rules: []", "groups[0].name"],
    ["groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: 'sum(('", "groups[0].rules[0].expr"],
    [
      "groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: up\n        for: soon",
      "groups[0].rules[0].for",
    ],
    ["groups:\n  - name: a\n    rules:\n      - record: x:y\n        expr: up", "groups[0].rules[0].record"],
    ["groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: up[5m]", "groups[0].rules[0].expr"],
    [
      "groups:\n  - name: a\n    rules:\n      - alert: X\n        expr: up\n        labels: { 1bad: x }",
      "groups[0].rules[0].labels.1bad",
    ],
    ["groups:\n  - name: a\n    rules: []\n  - name: a\n    rules: []", "groups[1].name"],
    ["groups: [", "file"],
  ];
  for (const [text, field] of cases) {
    assert.throws(
      () => parseRuleFile(text, { defaultIntervalMs: 15_000 }),
      (error: unknown) => error instanceof RuleFileError && error.field === field,
      `${JSON.stringify(text)} names ${field}`,
    );
  }
});

test("MT-08 pending until for: has elapsed, firing re-sent after resendMs, resolved told once", () => {
  const [group] = parseRuleFile(FILE, { defaultIntervalMs: 15_000 });
  const state = new AlertRuleState(group!.rules[0]!, { resendMs: 60_000 });
  const vector = [{ labels: labelsFromRecord({ job: "api" }), v: 2 }];
  assert.deepEqual(state.evaluate(vector, 0), []);
  assert.equal(state.alerts[0]!.state, "pending");
  assert.deepEqual(state.evaluate(vector, 119_999), []);
  const [firing] = state.evaluate(vector, 120_000);
  assert.equal(firing!.status, "firing");
  assert.equal(firing!.startsAtMs, 0);
  assert.deepEqual(firing!.annotations, { summary: "api fails 2/s" });
  assert.deepEqual(state.evaluate(vector, 150_000), [], "not re-sent before resendMs");
  assert.equal(state.evaluate(vector, 180_000).length, 1, "re-sent after resendMs");
  const [resolved] = state.evaluate([], 210_000);
  assert.equal(resolved!.status, "resolved");
  assert.equal(resolved!.endsAtMs, 210_000);
  assert.deepEqual(state.evaluate([], 240_000), [], "resolved is told once");
  // A pending alert that disappears is forgotten, never notified.
  state.evaluate(vector, 300_000);
  assert.deepEqual(state.evaluate([], 310_000), []);
  assert.equal(state.alerts.length, 0);
});

test("annotation templates expand $labels and $value", () => {
  assert.equal(expandTemplate("{{$labels.a}}/{{ $labels.b }}={{ $value }}", { a: "x" }, 1.5), "x/=1.5");
});
