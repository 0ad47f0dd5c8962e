/**
 * `@casebook/webhooks/client` against the real service (its composition root in process, on
 * embedded PGlite, admin API on): the admin client makes a tenant, the tenant client registers
 * an endpoint and publishes; the same Idempotency-Key twice is one event and one signed
 * delivery (verified with the `standardwebhooks` reference library); another body under that
 * key, a bad type and a wrong key are typed errors carrying the service's code and field. Then
 * the retry rules against a stand-in that misbehaves on purpose: 503s retried only for a call
 * the service dedupes (a keyed publish), a refused connection retried a bounded number of
 * times, bad options refused by name.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { Webhook } from "standardwebhooks";
import { WebhooksAdminClient, WebhooksClient, webhooksClientErrors } from "../src/client/index.ts";
import { main, type RunningWebhooks } from "../src/main.ts";

const ADMIN_TOKEN = "client-test-admin-token-0123456789";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

let dataDir: string;
let running: RunningWebhooks;
let receiver: Server;
let receiverUrl: string;
const hooks: Array<{ headers: IncomingHttpHeaders; body: string }> = [];

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-webhooks-client-"));
  running = await main({
    PORT: "0",
    CASEBOOK_DATA: dataDir,
    LOG_LEVEL: "silent",
    WEBHOOKS_ADMIN_TOKEN: ADMIN_TOKEN,
    WEBHOOKS_ALLOW_HTTP: "true",
    WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32",
    WEBHOOKS_POLL_INTERVAL_MS: "20",
    WEBHOOKS_HTTP_DEADLINE_MS: "5000",
    WEBHOOKS_LEASE_MS: "8000",
  });
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      hooks.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
});
after(async () => {
  await running?.close();
  receiver?.closeAllConnections();
  await new Promise((resolve) => receiver?.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

test("a tenant, an endpoint, and one event published twice under one key: one event, one signed delivery", async () => {
  const admin = new WebhooksAdminClient({ url: running.url, adminToken: ADMIN_TOKEN });
  const { tenant, apiKey } = await admin.createTenant({ name: "client test" });
  admin.close();
  assert.match(apiKey.key, /^whk_/);
  const webhooks = new WebhooksClient({ url: running.url, apiKey: apiKey.key });
  try {
    const endpoint = await webhooks.createSubscription({
      url: receiverUrl,
      eventTypes: ["metrics.*"],
      secret: SECRET,
    });
    assert.equal(endpoint.secret, SECRET);
    assert.deepEqual(endpoint.eventTypes, ["metrics.*"]);
    const payload = { version: "4", status: "firing", alerts: [{ labels: { alertname: "X" } }] };
    const first = await webhooks.publishEvent({
      type: "metrics.alert.firing",
      payload,
      idempotencyKey: "mta-1",
    });
    const again = await webhooks.publishEvent({
      type: "metrics.alert.firing",
      payload,
      idempotencyKey: "mta-1",
    });
    assert.equal(first.duplicate, false);
    assert.equal(again.duplicate, true);
    assert.equal(again.id, first.id);
    const stored = await webhooks.getEvent(first.id);
    assert.deepEqual(stored.payload, payload);
    assert.equal(stored.idempotencyKey, "mta-1");
    const hook = await until("the delivery", () => hooks.find((h) => h.headers["webhook-id"] === first.id));
    const verified = new Webhook(SECRET).verify(hook.body, hook.headers as Record<string, string>) as {
      type: string;
      data: unknown;
    };
    assert.equal(verified.type, "metrics.alert.firing");
    assert.deepEqual(verified.data, payload);
    const listed = await webhooks.listDeliveries({ eventId: first.id });
    assert.equal(listed.length, 1, "one delivery for the two publishes");
    assert.equal(listed[0]!.subscriptionId, endpoint.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(hooks.filter((h) => h.headers["webhook-id"] === first.id).length, 1);
    assert.ok(tenant.id.length > 0);
  } finally {
    webhooks.close();
  }
});

test("another body under a used key, a bad type and a wrong key are typed errors naming the service's code and field", async () => {
  const admin = new WebhooksAdminClient({ url: running.url, adminToken: ADMIN_TOKEN });
  const { apiKey } = await admin.createTenant({ name: "client errors" });
  admin.close();
  const webhooks = new WebhooksClient({ url: running.url, apiKey: apiKey.key });
  const stranger = new WebhooksClient({ url: running.url, apiKey: "whk_notakey_000000000000" });
  try {
    await webhooks.publishEvent({ type: "a.b", payload: { n: 1 }, idempotencyKey: "k-conflict" });
    await assert.rejects(
      webhooks.publishEvent({ type: "a.b", payload: { n: 2 }, idempotencyKey: "k-conflict" }),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_IDEMPOTENCY_CONFLICT") &&
        error.fields.code === "WEBHOOK_IDEMPOTENCY_CONFLICT",
    );
    await assert.rejects(
      webhooks.publishEvent({ type: "webhook.forged", payload: {} }),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_REJECTED") &&
        error.fields.status === 400 &&
        JSON.stringify(error.fields.errors).includes("/body/type"),
    );
    await assert.rejects(
      stranger.publishEvent({ type: "a.b", payload: {} }),
      (error) => webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_REJECTED") && error.fields.status === 401,
    );
    await assert.rejects(
      webhooks.publishEvent({ type: "a.b", payload: {}, idempotencyKey: "has space" }),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_CONFIG_INVALID") &&
        error.fields.field === "idempotencyKey",
    );
  } finally {
    webhooks.close();
    stranger.close();
  }
});

test("bounded retries: 503s retried for a keyed publish only, a refused connection a bounded number of times, bad options refused by name", async () => {
  let answers: number[] = [];
  const requests: Array<IncomingHttpHeaders> = [];
  const flaky = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests.push(req.headers);
      const status = answers.shift() ?? 202;
      res.writeHead(status, { "content-type": "application/json" });
      res.end(
        status === 202
          ? JSON.stringify({
              id: "msg_1",
              type: "a.b",
              createdAt: "2026-01-01T00:00:00.000Z",
              duplicate: false,
            })
          : status === 201
            ? "not json"
            : "{}",
      );
    });
  });
  flaky.listen(0, "127.0.0.1");
  await once(flaky, "listening");
  const url = `http://127.0.0.1:${(flaky.address() as AddressInfo).port}`;
  const client = new WebhooksClient({ url, apiKey: "whk_test_key_0000", attempts: 3, retryBaseMs: 5 });
  try {
    answers = [503, 503];
    const published = await client.publishEvent({ type: "a.b", payload: {}, idempotencyKey: "k1" });
    assert.equal(published.id, "msg_1");
    assert.equal(requests.length, 3, "two 503s, then the 202");
    assert.ok(
      requests.every((h) => h["idempotency-key"] === "k1" && h.authorization === "Bearer whk_test_key_0000"),
    );

    requests.length = 0;
    answers = [503];
    await assert.rejects(
      client.publishEvent({ type: "a.b", payload: {} }),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_UNAVAILABLE") && error.fields.lastStatus === 503,
    );
    assert.equal(requests.length, 1, "without a key a 503 is not retried: it may have stored the event");

    requests.length = 0;
    answers = [503, 503, 503, 503];
    await assert.rejects(
      client.publishEvent({ type: "a.b", payload: {}, idempotencyKey: "k2" }),
      (error) => webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_UNAVAILABLE") && error.fields.attempts === 3,
    );
    assert.equal(requests.length, 3, "attempts bound the tries");

    answers = [201];
    await assert.rejects(
      client.publishEvent({ type: "a.b", payload: {}, idempotencyKey: "k3" }),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_RESPONSE_INVALID") && error.fields.status === 201,
    );
  } finally {
    client.close();
    flaky.closeAllConnections();
    await new Promise((resolve) => flaky.close(resolve));
  }

  const nobody = new WebhooksClient({
    url: `http://127.0.0.1:${await freePort()}`,
    apiKey: "whk_test_key_0000",
    attempts: 2,
    retryBaseMs: 5,
  });
  await assert.rejects(
    nobody.publishEvent({ type: "a.b", payload: {} }),
    (error) =>
      webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_UNAVAILABLE") &&
      error.fields.attempts === 2 &&
      error.fields.mayHaveBeenProcessed === false,
  );
  nobody.close();
  for (const [options, field] of [
    [{ url: "not a url", apiKey: "whk_test_key_0000" }, "url"],
    [{ url, apiKey: "has space" }, "bearer"],
    [{ url, apiKey: "whk_test_key_0000", attempts: 0 }, "attempts"],
  ] as const) {
    assert.throws(
      () => new WebhooksClient(options),
      (error) =>
        webhooksClientErrors.is(error, "WEBHOOKS_CLIENT_CONFIG_INVALID") && error.fields.field === field,
    );
  }
});
