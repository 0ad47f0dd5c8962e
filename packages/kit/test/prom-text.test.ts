/**
 * The exposition format as Prometheus writes it and reads it: names, labels with every escape
 * and a trailing comma, values with their special forms, timestamps, HELP and TYPE, histograms'
 * and summaries' suffixes, and the bounds (problems described, samples capped).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parseFloatValue, parsePromText, typeOfSample } from "../src/prom-text.ts";

test("names, labels (escapes, a trailing comma, braces and commas inside quotes), values and timestamps", () => {
  const { samples, skippedLines, problems } = parsePromText(
    [
      "# HELP x_total things, with a \\\\ and a \\n newline",
      "# TYPE x_total counter",
      'x_total{a="1",b="quote \\" and \\\\ and \\n",} 42',
      "up 1 1700000000000",
      'weird{path="/a,b}{c",  code = "200" }\t7',
      "g NaN",
      "h +inf",
      "i -Inf -5",
      "garbage line here",
      "",
    ].join("\n"),
  );
  assert.deepEqual(samples.slice(0, 3), [
    { name: "x_total", labels: { a: "1", b: 'quote " and \\ and \n' }, value: 42 },
    { name: "up", labels: {}, value: 1, timestampMs: 1_700_000_000_000 },
    { name: "weird", labels: { path: "/a,b}{c", code: "200" }, value: 7 },
  ]);
  assert.ok(Number.isNaN(samples[3]!.value));
  assert.equal(samples[4]!.value, Number.POSITIVE_INFINITY);
  assert.deepEqual(samples[5], { name: "i", labels: {}, value: Number.NEGATIVE_INFINITY, timestampMs: -5 });
  assert.equal(skippedLines, 1);
  assert.deepEqual(problems, [{ line: 9, reason: "value line is not a float" }]);
});

test("HELP and TYPE are kept per family; a histogram's and a summary's suffixes belong to their family", () => {
  const scrape = parsePromText(
    [
      "# HELP lat_seconds Latency.",
      "# TYPE lat_seconds histogram",
      'lat_seconds_bucket{le="0.1"} 1',
      'lat_seconds_bucket{le="+Inf"} 3',
      "lat_seconds_sum 0.7",
      "lat_seconds_count 3",
      "# TYPE rpc_seconds summary",
      'rpc_seconds{quantile="0.99"} 0.2',
      "rpc_seconds_sum 9",
      "rpc_seconds_count 40",
      "# TYPE free gauge",
      "free 3",
      "loose 1",
    ].join("\n"),
  );
  assert.equal(scrape.skippedLines, 0);
  assert.equal(scrape.samples.length, 9);
  assert.equal(scrape.help.get("lat_seconds"), "Latency.");
  const typeOf = (name: string) => typeOfSample(name, scrape.types);
  assert.deepEqual(
    ["lat_seconds_bucket", "lat_seconds_count", "rpc_seconds", "rpc_seconds_sum", "free", "loose"].map(
      typeOf,
    ),
    ["histogram", "histogram", "summary", "summary", "gauge", "untyped"],
  );
  assert.equal(typeOf("rpc_seconds_bucket"), "untyped", "a summary has no buckets");
});

test("a bucket without a float le, a bad quantile, a bad TYPE, a bad value or timestamp are problems", () => {
  const scrape = parsePromText(
    [
      "# TYPE h histogram",
      "h_bucket 1",
      'h_bucket{le="big"} 1',
      "# TYPE s summary",
      's{quantile="high"} 1',
      "# TYPE t histogrum",
      "v 1.2.3",
      "w 1 1.5",
      'x{a="unclosed} 1',
      'y{a="1" b="2"} 1',
      'z{a="1",a="2"} 1',
    ].join("\n"),
  );
  assert.equal(scrape.samples.length, 0);
  assert.equal(scrape.skippedLines, 9);
  assert.deepEqual(
    scrape.problems.map((p) => p.line),
    [2, 3, 5, 6, 7, 8, 9, 10, 11],
  );
  assert.match(scrape.problems[0]!.reason, /needs a float "le"/);
});

test("maxSamples bounds a scrape and says it was cut", () => {
  const scrape = parsePromText("a 1\nb 2\nc 3\n", 2);
  assert.equal(scrape.samples.length, 2);
  assert.equal(scrape.truncated, true);
  assert.equal(parsePromText("a 1\n", 2).truncated, false);
});

test("floats as Go reads them: exponents, signs, the special words in any case; nothing else", () => {
  assert.equal(parseFloatValue("1e3"), 1000);
  assert.equal(parseFloatValue("-.5"), -0.5);
  assert.equal(parseFloatValue("+Inf"), Number.POSITIVE_INFINITY);
  assert.ok(Number.isNaN(parseFloatValue("nan")!));
  for (const bad of ["", "1,5", "0x10", "1e", "one"]) assert.equal(parseFloatValue(bad), undefined, bad);
});
