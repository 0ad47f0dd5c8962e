import assert from "node:assert/strict";
import { test } from "node:test";
import { Counter, register as globalRegistry } from "prom-client";
import { createMetricsRegistry, UNMATCHED_ROUTE } from "../../src/http/metrics.ts";
import { createService } from "../../src/http/service.ts";

function service(name: string) {
  const created = createService({ name, version: "0", log: { level: "silent" } });
  created.app.get("/widgets/:id", async () => ({ ok: true }));
  return created;
}

test("GET /metrics is Prometheus text with process metrics and the request histogram", async (t) => {
  const svc = service("metrics-a");
  t.after(() => svc.close());
  await svc.app.inject({ url: "/widgets/1" });
  const res = await svc.app.inject({ url: "/metrics" });
  assert.equal(res.statusCode, 200);
  assert.match(String(res.headers["content-type"]), /^text\/plain; version=0\.0\.4/);
  assert.match(res.body, /^# TYPE process_cpu_user_seconds_total counter$/m);
  assert.match(res.body, /^# TYPE nodejs_eventloop_lag_seconds gauge$/m);
  assert.match(res.body, /^# TYPE http_request_duration_seconds histogram$/m);
  assert.match(
    res.body,
    /^http_request_duration_seconds_count\{method="GET",route="\/widgets\/:id",status_code="200"\} 1$/m,
  );
});

test("the route label is the route pattern, never the raw URL; unmatched URLs share one label", async (t) => {
  const svc = service("metrics-b");
  t.after(() => svc.close());
  for (const url of ["/widgets/1", "/widgets/2?x=y", "/widgets/3", "/scan/a", "/scan/b"]) {
    await svc.app.inject({ url });
  }
  const text = await svc.registry.metrics();
  const counts = text.split("\n").filter((line) => line.startsWith("http_request_duration_seconds_count"));
  assert.deepEqual(counts, [
    'http_request_duration_seconds_count{method="GET",route="/widgets/:id",status_code="200"} 3',
    `http_request_duration_seconds_count{method="GET",route="${UNMATCHED_ROUTE}",status_code="404"} 2`,
  ]);
  assert.doesNotMatch(text, /widgets\/1|scan\/a/);
});

test("each service has its own registry: two services in one process do not clash", async (t) => {
  const first = service("metrics-c");
  const second = service("metrics-d");
  t.after(() => Promise.all([first.close(), second.close()]));
  // The same metric name in both registries: would throw if they shared prom-client's global registry.
  for (const svc of [first, second]) {
    new Counter({ name: "widgets_created_total", help: "Widgets created.", registers: [svc.registry] }).inc(
      svc === first ? 1 : 5,
    );
  }
  await first.app.inject({ url: "/widgets/1" });
  const [firstText, secondText] = await Promise.all([first.registry.metrics(), second.registry.metrics()]);
  assert.match(firstText, /^widgets_created_total 1$/m);
  assert.match(secondText, /^widgets_created_total 5$/m);
  assert.match(firstText, /route="\/widgets\/:id"/);
  assert.doesNotMatch(secondText, /route="\/widgets\/:id"/);
  assert.equal(globalRegistry.getSingleMetric("http_request_duration_seconds"), undefined);
  assert.equal(globalRegistry.getSingleMetric("widgets_created_total"), undefined);
});

test("defaultMetrics: false leaves the process metrics out", async () => {
  const registry = createMetricsRegistry({ defaultMetrics: false });
  assert.equal(await registry.metrics(), "\n");
  const withDefaults = createMetricsRegistry();
  assert.ok(withDefaults.getSingleMetric("process_resident_memory_bytes"));
});
