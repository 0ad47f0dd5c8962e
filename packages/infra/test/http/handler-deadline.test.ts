import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { createService, type Service } from "../../src/http/service.ts";

async function slowService(t: { after(fn: () => unknown): void }, handlerTimeoutMs: number) {
  const service = createService({
    name: "deadline",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    timeouts: { handlerTimeoutMs },
  });
  t.after(() => service.close());
  return service;
}

async function listen(service: Service): Promise<string> {
  return (await service.listen({ port: 0 })).url;
}

const json = { "content-type": "application/json" };

test("a POST whose body was read still answers 503 HANDLER_TIMEOUT past the deadline, over a real socket", async (t) => {
  // Fastify's own handlerTimeout is disarmed by the request's 'close', which Node emits once the
  // body is read: this exchange answered 200 after 300 ms with it.
  const service = await slowService(t, 50);
  service.app.post("/slow", async (request) => {
    await sleep(300);
    return { late: true, body: request.body };
  });
  const url = await listen(service);
  const res = await fetch(`${url}/slow`, { method: "POST", headers: json, body: '{"a":1}' });
  assert.equal(res.status, 503);
  assert.match(res.headers.get("content-type") ?? "", /application\/problem\+json/);
  assert.ok(res.headers.get("x-request-id"));
  assert.equal(((await res.json()) as { code: string }).code, "HANDLER_TIMEOUT");
});

test("a route's config.handlerTimeoutMs replaces the service's bound, both ways", async (t) => {
  const service = await slowService(t, 50);
  service.app.post("/long", { config: { handlerTimeoutMs: 2_000 } }, async () => {
    await sleep(150);
    return { ok: true };
  });
  service.app.get("/short", { config: { handlerTimeoutMs: 20 } }, async () => {
    await sleep(150);
    return { ok: true };
  });
  const url = await listen(service);
  const long = await fetch(`${url}/long`, { method: "POST", headers: json, body: "{}" });
  assert.equal(long.status, 200);
  assert.deepEqual(await long.json(), { ok: true });
  const short = await fetch(`${url}/short`);
  assert.equal(short.status, 503);
  assert.equal(((await short.json()) as { code: string }).code, "HANDLER_TIMEOUT");
});

test("a reply handed over to the route (hijacked: a stream) is the route's to bound: the deadline leaves it alone", async (t) => {
  const service = await slowService(t, 50);
  service.app.get("/stream", async (_request, reply) => {
    reply.hijack();
    reply.raw.writeHead(200, { "content-type": "text/plain" });
    for (const part of ["one ", "two ", "three"]) {
      reply.raw.write(part);
      await sleep(60);
    }
    reply.raw.end();
  });
  const url = await listen(service);
  const res = await fetch(`${url}/stream`);
  assert.equal(res.status, 200);
  assert.equal(await res.text(), "one two three");
});

test("a head sent without handing the reply over, then the deadline: the response is cut, never passed off as whole", async (t) => {
  const service = await slowService(t, 50);
  service.app.get("/half", async (_request, reply) => {
    reply.raw.writeHead(200, { "content-type": "text/plain" });
    reply.raw.write("partial");
    await sleep(300);
    return "never";
  });
  const url = await listen(service);
  const res = await fetch(`${url}/half`);
  assert.equal(res.status, 200);
  await assert.rejects(res.text(), /terminated|other side closed|aborted/i);
});

test("Fastify's own handlerTimeout route option is refused at registration, naming what to use", async (t) => {
  const service = await slowService(t, 50);
  assert.throws(
    () => service.app.post("/x", { handlerTimeout: 1_000 }, async () => ({})),
    /config\.handlerTimeoutMs/,
  );
  assert.throws(
    () => service.app.post("/y", { config: { handlerTimeoutMs: 0 } }, async () => ({})),
    /handlerTimeoutMs must be a whole number of ms > 0/,
  );
});
