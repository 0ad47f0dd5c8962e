/**
 * The composition root end to end on embedded PGlite in a temporary CASEBOOK_DATA, port 0:
 * ops routes and the OpenAPI document; the demo tenant's printed key works; an event posted
 * with a subscription to a local receiver (allow-listed) arrives signed — the demo receiver
 * and the `standardwebhooks` reference library both verify it — and its delivery reads
 * `succeeded`; a close while a send is in flight waits for it and records it; a restart
 * keeps the tenant and prints no new key; WEBHOOKS_WORKERS=off serves the API only, and
 * WEBHOOKS_ADMIN_TOKEN opens the admin API.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { Webhook } from "standardwebhooks";
import { main, type RunningWebhooks } from "../src/main.ts";
import { startDemoReceiver } from "../src/tools/demo-receiver.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/** Bounds on waiting for the worker: it polls every 20 ms here; a loaded 2-core machine is slow. */
const ARRIVAL_TIMEOUT_MS = 20_000;
const STATE_POLL_MS = 25;

let dataDir: string;
before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-webhooks-main-"));
});
after(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

function envFor(dir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  // No DATABASE_URL from the outer environment: this test is about the embedded default.
  return {
    PORT: "0",
    CASEBOOK_DATA: dir,
    LOG_LEVEL: "silent",
    WEBHOOKS_ALLOW_HTTP: "true",
    WEBHOOKS_ALLOW_CIDRS: "127.0.0.1/32",
    WEBHOOKS_POLL_INTERVAL_MS: "20",
    WEBHOOKS_HTTP_DEADLINE_MS: "5000",
    WEBHOOKS_LEASE_MS: "8000",
    ...extra,
  };
}

async function call(running: RunningWebhooks, method: string, path: string, body?: unknown) {
  const res = await fetch(`${running.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${running.bootstrap!.apiKey}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

/** The event's one delivery once it reached `state`; fails after ARRIVAL_TIMEOUT_MS. */
async function deliveryIn(running: RunningWebhooks, eventId: string, state: string) {
  const deadline = Date.now() + ARRIVAL_TIMEOUT_MS;
  for (;;) {
    const { body } = await call(running, "GET", `/v1/webhook-deliveries?eventId=${eventId}`);
    if (body.items[0]?.state === state) return body.items[0];
    if (Date.now() > deadline) assert.fail(`delivery of ${eventId}: ${JSON.stringify(body.items)}`);
    await new Promise((resolve) => setTimeout(resolve, STATE_POLL_MS));
  }
}

test("main() on PGlite: ops routes, every API route in /openapi.json, a working bootstrap key, a clean close", async () => {
  const running = await main(envFor(dataDir));
  try {
    assert.equal(running.db.engine, "pglite");
    assert.deepEqual(await (await fetch(`${running.url}/healthz`)).json(), { status: "ok" });
    assert.equal((await fetch(`${running.url}/readyz`)).status, 200);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    assert.match(metrics, /http_request_duration_seconds/);
    const openapi = (await (await fetch(`${running.url}/openapi.json`)).json()) as { paths: object };
    for (const path of [
      "/v1/events",
      "/v1/events/{id}",
      "/v1/subscriptions",
      "/v1/subscriptions/{id}",
      "/v1/subscriptions/{id}/rotate-secret",
      "/v1/webhook-deliveries",
      "/v1/webhook-deliveries/{id}",
      "/v1/webhook-deliveries/{id}/attempts",
      "/v1/webhook-deliveries/{id}/replay",
    ]) {
      assert.ok(path in openapi.paths, `${path} in /openapi.json`);
    }
    assert.equal("/v1/admin/tenants" in openapi.paths, false, "no admin token: no admin API");
    assert.equal(running.bootstrap?.tenantId, "demo");
    assert.match(running.bootstrap!.apiKey, /^whk_/);
    assert.deepEqual(await call(running, "GET", "/v1/subscriptions"), {
      status: 200,
      body: { items: [], nextCursor: null },
    });
    assert.equal((await fetch(`${running.url}/v1/subscriptions`)).status, 401);
    assert.ok(running.worker, "workers on by default");
  } finally {
    await running.close();
  }
  await assert.rejects(fetch(`${running.url}/healthz`), "the service no longer listens");
});

test("WH-01 WH-13 an event posted to a subscription on a local receiver arrives signed, and its delivery reads succeeded", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-webhooks-e2e-"));
  const receiver = await startDemoReceiver({ secrets: [SECRET], port: 0, log: () => {} });
  const running = await main(envFor(dir));
  try {
    const sub = await call(running, "POST", "/v1/subscriptions", {
      url: `${receiver.url}/hooks`,
      secret: SECRET,
      eventTypes: ["invoice.*"],
    });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const event = await call(running, "POST", "/v1/events", {
      type: "invoice.paid",
      payload: { invoice: "in_1", amount: 1250 },
    });
    assert.equal(event.status, 202);
    const hook = await receiver.waitFor((w) => w.id === event.body.id, ARRIVAL_TIMEOUT_MS);
    assert.equal(hook.type, "invoice.paid");
    const verified = new Webhook(SECRET).verify(hook.body, hook.headers as Record<string, string>) as {
      data: unknown;
    };
    assert.deepEqual(verified.data, { invoice: "in_1", amount: 1250 }, "the reference library verifies it");
    const delivery = await deliveryIn(running, event.body.id, "succeeded");
    assert.equal(delivery.attempts, 1);
    assert.equal(delivery.lastStatus, 204);
    const metrics = await (await fetch(`${running.url}/metrics`)).text();
    // The worker's metrics share the service's registry: one /metrics for API and worker (WH-24).
    assert.match(metrics, /webhooks_attempts_total\{[^}]*response_class="2xx"[^}]*\} 1/);
    assert.match(metrics, /webhooks_commit_to_2xx_seconds_count\{[^}]*\} 1/);
  } finally {
    await running.close();
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  }
});

/** A receiver that tells when a request arrived and answers only when told to. */
async function holdingReceiver() {
  const held: ServerResponse[] = [];
  const arrived: ((req: IncomingMessage) => void)[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      held.push(res);
      for (const notify of arrived.splice(0)) notify(req);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    arrival: () =>
      held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => arrived.push(() => resolve())),
    release: () => {
      for (const res of held.splice(0)) res.writeHead(200).end("ok");
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test("close() while a webhook is in flight waits for its answer and records it (graceful drain)", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-webhooks-drain-"));
  const receiver = await holdingReceiver();
  const running = await main(envFor(dir));
  let eventId: string;
  try {
    await call(running, "POST", "/v1/subscriptions", { url: receiver.url, secret: SECRET });
    eventId = (await call(running, "POST", "/v1/events", { type: "order.shipped", payload: { n: 1 } })).body
      .id;
    await receiver.arrival();
    let closed = false;
    // Answer only once the HTTP server has drained and the close hooks begin: the worker's stop
    // (the first hook) must wait for this send, and record it, before the pool (the last) closes.
    running.service.app.server.once("close", () =>
      setImmediate(() => {
        assert.equal(closed, false, "close() is still waiting on the send in flight");
        receiver.release();
      }),
    );
    await running.close();
    closed = true;
  } finally {
    await running.close();
    await receiver.close();
  }
  const db = await openDatabase({ system: "webhooks", env: { CASEBOOK_DATA: dir } });
  try {
    const { rows } = await db.query<{ state: string; attempts: number; lease_owner: string | null }>(
      "SELECT state, attempts, lease_owner FROM deliveries WHERE event_id = $1",
      [eventId],
    );
    assert.deepEqual(rows, [{ state: "succeeded", attempts: 1, lease_owner: null }]);
  } finally {
    await db.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("a restart keeps the demo tenant and its key, prints no new key; with WEBHOOKS_ADMIN_TOKEN and WEBHOOKS_WORKERS=off: the admin API, no worker", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-webhooks-restart-"));
  const token = "operator-token-0123456789";
  try {
    const first = await main(envFor(dir));
    const key = first.bootstrap!.apiKey;
    await first.close();
    const second = await main(envFor(dir, { WEBHOOKS_WORKERS: "off", WEBHOOKS_ADMIN_TOKEN: token }));
    try {
      assert.equal(second.bootstrap, undefined);
      assert.equal(second.worker, undefined);
      const res = await fetch(`${second.url}/v1/subscriptions`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(res.status, 200, "the first start's key still works");
      const created = await fetch(`${second.url}/v1/admin/tenants`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: "Acme" }),
      });
      assert.equal(created.status, 201);
      const { apiKey } = (await created.json()) as { apiKey: { key: string } };
      const list = await fetch(`${second.url}/v1/webhook-deliveries`, {
        headers: { authorization: `Bearer ${apiKey.key}` },
      });
      assert.equal(list.status, 200, "a tenant made by the admin API works at once");
    } finally {
      await second.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
