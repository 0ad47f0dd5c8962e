import assert from "node:assert/strict";
import { test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { defineErrors } from "@casebook/kit/errors";
import { ACCESS_LOG_MESSAGE } from "../../src/http/access-log.ts";
import { createService, type ServiceOptions } from "../../src/http/service.ts";

const gadgetErrors = defineErrors({
  GADGET_NOT_FOUND: { status: 404, message: "No gadget with this id." },
});

type Line = Record<string, unknown>;

/** A service whose log lines (every level) are captured, on a manual clock. */
function gadgetService(options: Partial<ServiceOptions> = {}) {
  const lines: Line[] = [];
  const clock = new ManualClock(1_000_000);
  const service = createService({
    name: "gadgets",
    version: "0.0.1",
    log: { level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
    defaultMetrics: false,
    errors: [gadgetErrors],
    clock,
    ...options,
  });
  service.app.get("/gadgets/:id", async (request) => {
    const { id } = request.params as { id: string };
    if (id === "missing") throw gadgetErrors.create("GADGET_NOT_FOUND");
    if (id === "broken") throw new Error("disk on fire");
    return { id };
  });
  service.app.get("/r/:code", { config: { accessLog: "sampled" } }, async (_request, reply) =>
    reply.code(302).header("location", "https://example.com").send(),
  );
  service.app.get("/stream/:id", { config: { accessLog: "own" } }, async (request, reply) => {
    const { id } = request.params as { id: string };
    if (id === "gone") throw gadgetErrors.create("GADGET_NOT_FOUND");
    request.log.info({ id, frames: 3 }, "stream closed");
    return reply.send({ id });
  });
  service.app.get("/quiet", { config: { accessLog: "off" } }, async () => ({ ok: true }));
  const access = () => lines.filter((line) => line.msg === ACCESS_LOG_MESSAGE);
  return { service, lines, access, clock };
}

async function suppressedSample(
  service: { app: { inject(o: { url: string }): Promise<{ body: string }> } },
  reason: string,
) {
  const text = (await service.app.inject({ url: "/metrics" })).body;
  const match = new RegExp(`^http_access_log_suppressed_total\\{reason="${reason}"\\} (\\d+)$`, "m").exec(
    text,
  );
  return Number(match?.[1] ?? 0);
}

test("a request writes one line: method, route, url without query, status, durationMs, requestId", async () => {
  const { service, lines } = gadgetService();
  const res = await service.app.inject({
    url: "/gadgets/g1?token=secret",
    headers: { "x-request-id": "req-1" },
  });
  assert.equal(res.statusCode, 200);
  const ours = lines.filter((line) => line.requestId === "req-1");
  assert.equal(ours.length, 1, JSON.stringify(ours));
  const [line] = ours as [Line];
  assert.equal(line.msg, "request");
  assert.equal(line.level, "info");
  assert.equal(line.method, "GET");
  assert.equal(line.route, "/gadgets/:id");
  assert.equal(line.url, "/gadgets/g1");
  assert.equal(line.status, 200);
  assert.equal(typeof line.durationMs, "number");
  assert.doesNotMatch(JSON.stringify(lines), /secret/);
  await service.close();
});

test("a 4xx line names its code; beyond clientErrorLinesPerS a second the rest are counted, not written", async () => {
  const { service, access, clock, lines } = gadgetService({ accessLog: { clientErrorLinesPerS: 3 } });
  for (let i = 0; i < 10; i++)
    assert.equal((await service.app.inject({ url: "/gadgets/missing" })).statusCode, 404);
  for (let i = 0; i < 5; i++) assert.equal((await service.app.inject({ url: "/nowhere" })).statusCode, 404);
  const written = access();
  assert.equal(written.length, 3, "three lines in the first second");
  assert.deepEqual(
    written.map((line) => [line.level, line.status, line.code]),
    Array(3).fill(["info", 404, "GADGET_NOT_FOUND"]),
  );
  assert.equal(lines.filter((line) => line.msg === "request rejected").length, 0, "the detail line is debug");
  assert.equal(await suppressedSample(service, "client_error"), 12);
  clock.advance(1_000);
  await service.app.inject({ url: "/nowhere" });
  const next = access().at(-1)!;
  assert.equal(next.route, null, "an unmatched request has no route pattern");
  assert.equal(next.url, "/nowhere");
  assert.equal(next.suppressed, 12, "the next line written says how many were left out");
  await service.close();
});

test("2xx lines are not bounded: a flood of successes is all written", async () => {
  const { service, access } = gadgetService({ accessLog: { clientErrorLinesPerS: 1 } });
  for (let i = 0; i < 20; i++) await service.app.inject({ url: `/gadgets/g${i}` });
  assert.equal(access().length, 20);
  await service.close();
});

test("a 5xx is always written at warn with its code; the failure itself is logged once at error", async () => {
  const { service, access, lines } = gadgetService({ accessLog: { clientErrorLinesPerS: 0 } });
  for (let i = 0; i < 3; i++)
    assert.equal((await service.app.inject({ url: "/gadgets/broken" })).statusCode, 500);
  assert.deepEqual(
    access().map((line) => [line.level, line.status, line.code]),
    Array(3).fill(["warn", 500, "INTERNAL_ERROR"]),
  );
  assert.equal(lines.filter((line) => line.level === "error").length, 3);
  await service.close();
});

test('accessLog "sampled": at most sampledLinesPerS lines a second for the route, the rest counted', async () => {
  const { service, access, clock } = gadgetService({ accessLog: { sampledLinesPerS: 2 } });
  for (let i = 0; i < 50; i++) assert.equal((await service.app.inject({ url: `/r/c${i}` })).statusCode, 302);
  assert.deepEqual(
    access().map((line) => line.url),
    ["/r/c0", "/r/c1"],
  );
  assert.equal(await suppressedSample(service, "sampled"), 48);
  clock.advance(1_000);
  await service.app.inject({ url: "/r/later" });
  assert.equal(access().at(-1)!.suppressed, 48);
  // Another route's lines are not taken from the sampled route's budget.
  await service.app.inject({ url: "/gadgets/x" });
  assert.equal(access().at(-1)!.route, "/gadgets/:id");
  await service.close();
});

test('accessLog "own": the route\'s record is its access line; its refusals still get one', async () => {
  const { service, lines, access } = gadgetService();
  await service.app.inject({ url: "/stream/s1", headers: { "x-request-id": "own-1" } });
  assert.deepEqual(
    lines.filter((line) => line.requestId === "own-1").map((line) => line.msg),
    ["stream closed"],
  );
  await service.app.inject({ url: "/stream/gone" });
  assert.deepEqual(
    access().map((line) => [line.route, line.status]),
    [["/stream/:id", 404]],
  );
  await service.close();
});

test('accessLog "off" and the operator routes write nothing', async () => {
  const { service, lines } = gadgetService();
  for (const url of ["/quiet", "/healthz", "/readyz", "/metrics", "/openapi.json"]) {
    assert.equal((await service.app.inject({ url })).statusCode, 200, url);
  }
  assert.deepEqual(lines, []);
  await service.close();
});

test("an unknown accessLog policy fails the route's registration", async () => {
  const { service } = gadgetService();
  assert.throws(
    () => service.app.get("/typo", { config: { accessLog: "sample" as "sampled" } }, async () => ({})),
    /accessLog must be one of on, sampled, own, off/,
  );
  await service.close();
});
