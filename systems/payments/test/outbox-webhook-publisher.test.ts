/**
 * The webhook publisher (on `@casebook/webhooks/client`) against a local HTTP server on port
 * 0: one POST per event to the webhooks system's intake, in its shape (type + payload), with
 * the event id as Idempotency-Key; non-2xx and timeouts are failures (the relay retries); and
 * without WEBHOOKS_URL the in-memory publisher is used. Then against the real webhooks
 * service (its own process, embedded PGlite): the event is taken, and a republish of it (the
 * relay is at-least-once) is answered as the same event — stored once, delivered once.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { outboxErrors } from "@casebook/infra/sql/outbox-errors";
import { startServerProcess } from "@casebook/lab/server-process";
import { WebhooksAdminClient, WebhooksClient } from "@casebook/webhooks/client";
import {
  createEventPublisher,
  createWebhookPublisher,
  eventPayload,
  MemoryPublisher,
} from "../src/clients/webhook-publisher.ts";
import type { OutboxEvent } from "../src/store/outbox.ts";

const EVENT: OutboxEvent = {
  eventId: "evt_1",
  orderingKey: "acct_1",
  seq: 7n,
  type: "payment.captured",
  payload: { amountMinor: "5000" },
  createdAtMs: Date.UTC(2026, 9, 22),
};

interface Received {
  url: string | undefined;
  headers: IncomingMessage["headers"];
  body: unknown;
}

describe("webhook publisher", () => {
  const received: Received[] = [];
  let answer: (res: ServerResponse) => void = (res) => res.writeHead(202).end();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({
        url: req.url,
        headers: req.headers,
        body: JSON.parse(Buffer.concat(chunks).toString("utf8")),
      });
      answer(res);
    });
  });
  let url = "";

  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/events`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  test("POSTs the event with its id as Idempotency-Key and the API key", async () => {
    answer = (res) => res.writeHead(202).end();
    const publisher = createWebhookPublisher({ url, apiKey: "k_test", timeoutMs: 5_000 });
    await publisher.publish(EVENT, new AbortController().signal);
    const last = received.at(-1)!;
    assert.equal(last.headers["idempotency-key"], "evt_1");
    assert.equal(last.headers.authorization, "Bearer k_test");
    assert.equal(last.url, "/v1/events");
    // The webhooks intake's body: the event's type, and the outbox event as its payload.
    assert.deepEqual(last.body, {
      type: "payment.captured",
      payload: {
        id: "evt_1",
        orderingKey: "acct_1",
        seq: "7",
        createdAt: "2026-10-22T00:00:00.000Z",
        payload: { amountMinor: "5000" },
      },
    });
  });

  test("a non-2xx answer is a failure carrying the status", async () => {
    answer = (res) => res.writeHead(503).end("busy");
    const publisher = createWebhookPublisher({ url, apiKey: "k_test" });
    await assert.rejects(
      publisher.publish(EVENT, new AbortController().signal),
      (err) => outboxErrors.is(err, "OUTBOX_PUBLISH_FAILED") && err.fields.status === 503,
    );
  });

  test("a receiver that never answers fails at the timeout", async () => {
    answer = () => {}; // hold the request open
    // 1 s, not less: the connect to this in-process server must finish inside the deadline even
    // after a stall of a loaded host, or the deadline ends in "connect" (a 50 ms one did).
    const publisher = createWebhookPublisher({ url, apiKey: "k_test", timeoutMs: 1_000 });
    // The whole-call deadline (was fetch's TimeoutError), typed by the phase it ended in.
    await assert.rejects(
      publisher.publish(EVENT, new AbortController().signal),
      (err) =>
        outboundErrors.is(err, "OUTBOUND_DEADLINE_EXCEEDED") &&
        err.fields.phase === "headers" &&
        err.fields.deadlineMs === 1_000,
    );
    const phased = createWebhookPublisher({
      url,
      apiKey: "k_test",
      timeoutMs: 5_000,
      timeouts: { headersMs: 50 },
    });
    await assert.rejects(phased.publish(EVENT, new AbortController().signal), (err) =>
      outboundErrors.is(err, "OUTBOUND_HEADERS_TIMEOUT"),
    );
  });

  test("the relay's signal ends a publish in flight", async () => {
    answer = () => {}; // hold the request open
    const publisher = createWebhookPublisher({ url, apiKey: "k_test", timeoutMs: 5_000 });
    const controller = new AbortController();
    const reason = new Error("relay timeout");
    const publishing = publisher.publish(EVENT, controller.signal);
    const seen = received.length;
    for (let i = 0; i < 200 && received.length === seen; i++) await new Promise((r) => setImmediate(r));
    controller.abort(reason);
    await assert.rejects(
      publishing,
      (err) => outboundErrors.is(err, "OUTBOUND_ABORTED") && err.cause === reason,
    );
  });

  test("without WEBHOOKS_URL events stay in a bounded memory publisher; a bad URL fails by name", async () => {
    const publisher = createEventPublisher({});
    assert.ok(publisher instanceof MemoryPublisher);
    const memory = new MemoryPublisher(2);
    for (const seq of [1n, 2n, 3n]) await memory.publish({ ...EVENT, seq });
    assert.deepEqual(
      memory.events.map((e) => e.seq),
      [2n, 3n],
    );
    assert.throws(
      () => createEventPublisher({ webhooksUrl: "not a url", webhooksApiKey: "k" }),
      /WEBHOOKS_URL/,
    );
    assert.throws(() => createEventPublisher({ webhooksUrl: "http://127.0.0.1:8113" }), /WEBHOOKS_API_KEY/);
  });
});

test("against the webhooks service itself: the event is accepted in its shape, a republish is the same event", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-payments-webhooks-"));
  const adminToken = "payments-publisher-admin-token-01234";
  const webhooks = await startServerProcess({
    name: "webhooks",
    entry: new URL("../../webhooks/src/main.ts", import.meta.url),
    env: { CASEBOOK_DATA: dir, WEBHOOKS_ADMIN_TOKEN: adminToken, WEBHOOKS_WORKERS: "off" },
    readyTimeoutMs: 60_000,
  });
  t.after(async () => {
    await webhooks.stop();
    await rm(dir, { recursive: true, force: true });
  });
  const admin = new WebhooksAdminClient({ url: webhooks.url, adminToken });
  const { apiKey } = await admin.createTenant({ name: "payments" });
  admin.close();
  // WEBHOOKS_URL in the form it was first documented: the intake's full URL.
  const publisher = createWebhookPublisher({ url: `${webhooks.url}/v1/events`, apiKey: apiKey.key });
  await publisher.publish(EVENT, new AbortController().signal);
  await publisher.publish(EVENT, new AbortController().signal);
  const reader = new WebhooksClient({ url: webhooks.url, apiKey: apiKey.key });
  try {
    // The publisher's body again under the event's key: answered as the event the two publishes made.
    const again = await reader.publishEvent({
      type: EVENT.type,
      payload: eventPayload(EVENT),
      idempotencyKey: EVENT.eventId,
    });
    assert.equal(again.duplicate, true, "the two publishes made one event, whose body this is");
    const stored = await reader.getEvent(again.id);
    assert.equal(stored.type, "payment.captured");
    assert.equal(stored.idempotencyKey, "evt_1");
  } finally {
    reader.close();
  }
});
