import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { commonErrors, defineErrors } from "@casebook/kit/errors";
import { createLogger } from "../../src/http/logger.ts";
import { createService, type ServiceOptions } from "../../src/http/service.ts";

const widgetErrors = defineErrors({
  WIDGET_NOT_FOUND: { status: 404, message: "No widget with this id for your tenant." },
  WIDGET_BUSY: { status: 503, message: "The widget is being rebuilt; retry after `retryAfterMs`." },
});

const widgetBody = {
  type: "object",
  required: ["name", "cost"],
  additionalProperties: false,
  properties: { name: { type: "string", maxLength: 40 }, cost: { type: "integer", minimum: 0 } },
};

/** A service with one route of each kind; `lines` collects its JSON log lines. */
function widgetService(options: Partial<ServiceOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const service = createService({
    name: "widgets",
    version: "1.2.3",
    log: { level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    defaultMetrics: false,
    errors: [widgetErrors],
    newRequestId: (() => {
      let n = 0;
      return () => `generated-${++n}`;
    })(),
    ...options,
  });
  service.app.post("/widgets", { schema: { body: widgetBody } }, async (request) => {
    request.log.info("creating widget");
    return { created: true };
  });
  service.app.get("/widgets/:id", async (request) => {
    const { id } = request.params as { id: string };
    throw widgetErrors.create("WIDGET_NOT_FOUND", { fields: { id } });
  });
  service.app.get("/busy", async () => {
    throw widgetErrors.create("WIDGET_BUSY", { fields: { retryAfterMs: 1_001 } });
  });
  service.app.get("/crash", async () => {
    throw new Error("connection to 10.0.0.7 failed: password authentication failed for user admin");
  });
  return { service, lines };
}

test("GET /healthz answers 200 {status: ok}", async () => {
  const { service } = widgetService();
  const res = await service.app.inject({ url: "/healthz" });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.json(), { status: "ok" });
  await service.close();
});

test("GET /readyz runs every check: 200 when all pass", async () => {
  const clock = new ManualClock();
  const { service } = widgetService({
    clock,
    checks: {
      database: async () => {
        clock.advance(3);
      },
      redis: async () => {},
    },
  });
  const res = await service.app.inject({ url: "/readyz" });
  assert.equal(res.statusCode, 200);
  const body = res.json();
  assert.equal(body.status, "ok");
  assert.deepEqual(Object.keys(body.checks).sort(), ["database", "redis"]);
  assert.deepEqual(body.checks.database, { status: "ok", durationMs: 3 });
  await service.close();
});

test("GET /readyz answers 503 naming the failed and the timed-out check, and why", async () => {
  const { service } = widgetService({
    checkTimeoutMs: 20,
    checks: {
      database: async () => {},
      redis: async () => {
        throw new Error("connect ECONNREFUSED 127.0.0.1:6379");
      },
    },
  });
  service.addCheck(
    "queue",
    (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
  );
  const res = await service.app.inject({ url: "/readyz" });
  assert.equal(res.statusCode, 503);
  const body = res.json();
  assert.equal(body.status, "unavailable");
  assert.equal(body.checks.database.status, "ok");
  assert.equal(body.checks.redis.status, "failed");
  assert.match(body.checks.redis.error, /ECONNREFUSED 127\.0\.0\.1:6379/);
  assert.equal(body.checks.queue.status, "failed");
  assert.match(body.checks.queue.error, /timed out after 20 ms/);
  await service.close();
});

test("an incoming x-request-id is echoed and is in every log line of the request", async () => {
  const { service, lines } = widgetService();
  const res = await service.app.inject({
    method: "POST",
    url: "/widgets",
    headers: { "x-request-id": "checkout-7f3a.2" },
    payload: { name: "gear", cost: 3 },
  });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers["x-request-id"], "checkout-7f3a.2");
  const requestLines = lines.filter((line) => line.requestId === "checkout-7f3a.2");
  assert.deepEqual(
    requestLines.map((line) => line.msg),
    ["creating widget", "request"],
  );
  for (const line of requestLines) {
    assert.equal(line.service, "widgets");
    assert.equal(line.version, "1.2.3");
    assert.equal(line.level, "info");
  }
  await service.close();
});

test("an unsafe or oversized x-request-id is replaced by a generated one", async () => {
  const { service } = widgetService();
  for (const bad of ["has space", "semi;colon", "x".repeat(129), ""]) {
    const res = await service.app.inject({ url: "/healthz", headers: { "x-request-id": bad } });
    assert.match(String(res.headers["x-request-id"]), /^generated-\d+$/, JSON.stringify(bad));
  }
  await service.close();
});

test("a schema violation is 400 problem+json REQUEST_INVALID naming the field", async () => {
  const { service } = widgetService();
  const cases = [
    { payload: { name: "gear", cost: -1 }, field: "/body/cost" },
    { payload: { name: "gear" }, field: "/body/cost" },
    { payload: { name: "gear", cost: 1, colour: "red" }, field: "/body/colour" },
  ];
  for (const { payload, field } of cases) {
    const res = await service.app.inject({ method: "POST", url: "/widgets?x=1", payload });
    assert.equal(res.statusCode, 400);
    assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
    const problem = res.json();
    assert.equal(problem.code, "REQUEST_INVALID");
    assert.equal(problem.type, "urn:casebook:problem:request-invalid");
    assert.equal(problem.title, "Request invalid");
    assert.equal(problem.status, 400);
    assert.equal(problem.instance, "/widgets", "the query string is not part of the instance");
    assert.equal(problem.requestId, res.headers["x-request-id"]);
    assert.equal(problem.detail, commonErrors.specs.REQUEST_INVALID.message);
    assert.equal(problem.errors.length, 1);
    assert.equal(problem.errors[0].field, field);
    assert.equal(typeof problem.errors[0].message, "string");
  }
  await service.close();
});

test("malformed JSON is 400 REQUEST_MALFORMED; a body over the limit is 413 REQUEST_TOO_LARGE", async () => {
  const { service } = widgetService({ bodyLimitBytes: 1_024 });
  const headers = { "content-type": "application/json" };
  const malformed = await service.app.inject({
    method: "POST",
    url: "/widgets",
    headers,
    payload: '{"name":',
  });
  assert.equal(malformed.statusCode, 400);
  assert.equal(malformed.json().code, "REQUEST_MALFORMED");
  const large = await service.app.inject({
    method: "POST",
    url: "/widgets",
    headers,
    payload: JSON.stringify({ name: "x".repeat(2_000), cost: 1 }),
  });
  assert.equal(large.statusCode, 413);
  assert.equal(large.json().code, "REQUEST_TOO_LARGE");
  assert.equal(large.json().limitBytes, 1_024);
  const csv = await service.app.inject({
    method: "POST",
    url: "/widgets",
    headers: { "content-type": "text/csv" },
    payload: "a,b",
  });
  assert.equal(csv.statusCode, 415);
  assert.equal(csv.json().code, "REQUEST_MEDIA_TYPE_UNSUPPORTED");
  await service.close();
});

test("an unknown route is 404 problem+json RESOURCE_NOT_FOUND with the request id", async () => {
  const { service } = widgetService();
  const res = await service.app.inject({ method: "DELETE", url: "/nothing/here?token=secret" });
  assert.equal(res.statusCode, 404);
  assert.match(String(res.headers["content-type"]), /^application\/problem\+json/);
  const problem = res.json();
  assert.equal(problem.code, "RESOURCE_NOT_FOUND");
  assert.equal(problem.detail, "No route matches DELETE /nothing/here.");
  assert.equal(problem.requestId, res.headers["x-request-id"]);
  await service.close();
});

test("a thrown CasebookError becomes its problem: status, code, detail and fields", async () => {
  const { service } = widgetService();
  const res = await service.app.inject({ url: "/widgets/w-9" });
  assert.equal(res.statusCode, 404);
  assert.deepEqual(res.json(), {
    type: "urn:casebook:problem:widget-not-found",
    title: "Widget not found",
    status: 404,
    detail: "No widget with this id for your tenant.",
    instance: "/widgets/w-9",
    code: "WIDGET_NOT_FOUND",
    requestId: "generated-1",
    id: "w-9",
  });
  await service.close();
});

test("fields.retryAfterMs becomes a Retry-After header in whole seconds, rounded up", async () => {
  const { service } = widgetService();
  const res = await service.app.inject({ url: "/busy" });
  assert.equal(res.statusCode, 503);
  assert.equal(res.headers["retry-after"], "2");
  assert.equal(res.json().retryAfterMs, 1_001);
  await service.close();
});

test("an unknown error is 500 INTERNAL_ERROR without its message; the log has the message and stack", async () => {
  const { service, lines } = widgetService();
  const res = await service.app.inject({ url: "/crash" });
  assert.equal(res.statusCode, 500);
  const problem = res.json();
  assert.equal(problem.code, "INTERNAL_ERROR");
  assert.doesNotMatch(res.body, /password|10\.0\.0\.7/);
  const logged = lines.find((line) => line.msg === "request failed");
  assert.ok(logged);
  assert.equal(logged.level, "error");
  assert.equal(logged.requestId, problem.requestId);
  const err = logged.err as { message: string; stack: string };
  assert.match(err.message, /password authentication failed/);
  assert.match(err.stack, /service\.test\.ts/);
  await service.close();
});

test("an error code missing from every registry is answered and flagged in the log", async () => {
  const { service, lines } = widgetService();
  const strays = defineErrors({ STRAY_CODE: { status: 409, message: "A code nobody registered." } });
  service.app.get("/stray", async () => {
    throw strays.create("STRAY_CODE");
  });
  const res = await service.app.inject({ url: "/stray" });
  assert.equal(res.statusCode, 409);
  assert.ok(lines.some((line) => line.level === "warn" && line.code === "STRAY_CODE"));
  await service.close();
});

test("two registries defining one code with different statuses fail at creation", () => {
  const clash = defineErrors({ REQUEST_INVALID: { status: 422, message: "Clashes with commonErrors." } });
  assert.throws(
    () => createService({ name: "x", version: "0", log: { level: "silent" }, errors: [clash] }),
    /REQUEST_INVALID.*400.*422/,
  );
});

test("the server timeouts and limits are set explicitly", async () => {
  const { service } = widgetService({ timeouts: { requestTimeoutMs: 15_000 } });
  const { server } = service.app;
  assert.equal(server.keepAliveTimeout, 72_000);
  assert.equal(server.requestTimeout, 15_000);
  assert.equal(server.headersTimeout, 10_000);
  assert.equal(server.timeout, 120_000);
  // The handler deadline is ours (handler-deadline.ts): Fastify's is never armed.
  assert.equal((service.app.initialConfig as { handlerTimeout?: number }).handlerTimeout, 0);
  assert.equal(service.app.initialConfig.bodyLimit, 1_048_576);
  await service.close();
});

test("X-Forwarded-For is ignored unless trustProxy is configured", async () => {
  const { service } = widgetService();
  service.app.get("/ip", async (request) => ({ ip: request.ip }));
  const res = await service.app.inject({ url: "/ip", headers: { "x-forwarded-for": "203.0.113.9" } });
  assert.equal(res.json().ip, "127.0.0.1");
  await service.close();
});

test("listen() defaults to 127.0.0.1 and returns the URL it listens on", async () => {
  const { service } = widgetService();
  const { url } = await service.listen({ port: 0 });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const res = await fetch(`${url}/healthz`);
  assert.equal(res.status, 200);
  assert.ok(res.headers.get("x-request-id"));
  await service.close();
});

test("a ready pino logger can be passed as `log` and is the one the service writes to", async () => {
  const lines: string[] = [];
  const shared = createLogger({
    service: "shared",
    version: "9",
    destination: { write: (l: string) => void lines.push(l) },
  });
  const service = createService({ name: "widgets", version: "1", log: shared, defaultMetrics: false });
  assert.equal(service.log, shared);
  await service.app.inject({ url: "/nope" });
  assert.ok(lines.some((line) => JSON.parse(line).service === "shared"));
  await service.close();
});
