/**
 * The HTTP sender against a local receiver (allow list 127.0.0.1): signed POST, redirects
 * not followed, timeouts split by phase, response body bounded, Retry-After surfaced,
 * keep-alive reuse. Timeouts here are short (hundreds of ms) and each test waits for the
 * event it asserts, never a fixed sleep.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { outboundErrors } from "@casebook/infra/http/outbound-errors";
import { seededRandom } from "@casebook/kit/random";
import {
  type MisbehavingServer,
  startMisbehavingServer,
  startSilentServer,
} from "@casebook/lab/misbehaving-http-server";
import { Webhook } from "standardwebhooks";
import { attemptResultOf, HttpSender } from "../src/clients/http-sender.ts";
import { decideOutcome } from "../src/domain/delivery-outcome.ts";
import { RetryPolicy } from "../src/domain/retry-policy.ts";
import { verifyWebhook } from "../src/domain/signature.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";

const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const policy = createUrlPolicy({ allowHttp: true, allow: ["127.0.0.1/32"] });
const timeouts = { connectMs: 300, headersMs: 300, bodyMs: 300 };
/**
 * Every phase roomy but the one a test times out: the receiver runs in this process, and one
 * stall of 300 ms on a loaded host failed tests whose claim has nothing to do with time.
 */
const roomy = { connectMs: 5_000, headersMs: 5_000, bodyMs: 5_000 };
let receiver: MisbehavingServer;
let sender: HttpSender;

before(async () => {
  receiver = await startMisbehavingServer();
  sender = new HttpSender({ policy, timeouts: roomy, maxBodyBytes: 64 * 1024, bodyExcerptBytes: 32 });
});

after(async () => {
  sender.close();
  await receiver.close();
});

const message = (path: string, body = '{"type":"invoice.paid"}') => ({
  url: receiver.url(path),
  messageId: "msg_sender_1",
  body,
  secrets: [SECRET],
});

const timeoutIn = (phase: "connect" | "headers" | "body") => (e: unknown) =>
  outboundErrors.is(e, `OUTBOUND_${phase.toUpperCase() as Uppercase<typeof phase>}_TIMEOUT`) &&
  e.fields.phase === phase;

test("2xx: one signed POST the receiver verifies, with phase timings; the next attempt reuses the socket", async () => {
  const first = await sender.send(message("/ok"));
  assert.equal(first.status, 200);
  assert.equal(first.bodyExcerpt, "ok 23");
  assert.equal(first.remoteAddress, "127.0.0.1");
  assert.ok(first.durationMs >= first.timings.headersMs);
  const got = receiver.received.at(-1)!;
  assert.equal(got.headers["content-type"], "application/json");
  const headers = got.headers as Record<string, string>;
  assert.deepEqual(new Webhook(SECRET).verify(got.body, headers), { type: "invoice.paid" });
  const nowS = Math.floor(Date.now() / 1_000);
  assert.equal(verifyWebhook({ headers, body: got.body, secrets: [SECRET], nowS }).id, "msg_sender_1");
  const second = await sender.send(message("/ok"));
  assert.equal(second.reusedSocket, true, "keep-alive: no new handshake per attempt");
});

test("3xx is returned, never followed: the redirect target gets nothing", async () => {
  const before = receiver.received.length;
  const response = await sender.send(message("/redirect"));
  assert.equal(response.status, 302);
  assert.equal(response.headers.location, "/target");
  assert.deepEqual(
    receiver.received.slice(before).map((r) => r.path),
    ["/redirect"],
  );
});

/** A send by a sender whose one short phase is `phase` (300 ms). */
async function sendTimingOut(phase: "headers" | "body", path: string): Promise<unknown> {
  const short = new HttpSender({ policy, timeouts: { ...roomy, [`${phase}Ms`]: 300 } });
  try {
    return await short.send(message(path)).catch((e: unknown) => e);
  } finally {
    short.close();
  }
}

test("slow headers end in a headers timeout, typed and mapped to a retry", async () => {
  const error = await sendTimingOut("headers", "/slow-headers");
  assert.ok(timeoutIn("headers")(error), String(error));
  assert.deepEqual(attemptResultOf(error), { kind: "timeout", phase: "headers" });
});

test("a stalled body ends in a body timeout, even after a 200 head", async () => {
  const error = await sendTimingOut("body", "/slow-body");
  assert.ok(timeoutIn("body")(error), String(error));
  assert.equal((error as { fields: { timeoutMs: number } }).fields.timeoutMs, 300);
});

test("a big response body is read up to the bound, then dropped", async () => {
  const response = await sender.send(message("/big"));
  assert.equal(response.status, 200);
  assert.equal(response.bodyTruncated, true);
  assert.equal(response.bodyBytes, 64 * 1024);
  assert.equal(response.bodyExcerpt, "x".repeat(32));
});

test("a throttling answer surfaces Retry-After, and the outcome holds the endpoint for it", async () => {
  const response = await sender.send(message("/throttle"));
  assert.deepEqual([response.status, response.headers.retryAfter], [503, "7"]);
  const outcome = decideOutcome({
    result: attemptResultOf(response),
    attempt: 1,
    clientErrorStreak: 0,
    endpoint: { clientErrors: 0, clientErrorsSinceMs: null },
    createdAtMs: 0,
    nowMs: 1_000,
    policy: new RetryPolicy({ random: seededRandom(1), jitter: "none" }),
  });
  assert.deepEqual([outcome.state, outcome.throttleEndpointUntilMs], ["retrying", 8_000]);
});

test("connect timeout: a name whose resolution never answers times out in the connect phase", async () => {
  const stalled = new HttpSender({ policy, timeouts, resolver: () => new Promise(() => {}) });
  try {
    const error = await stalled
      .send({ ...message("/ok"), url: `http://hooks.test:${receiver.port}/ok` })
      .catch((e) => e);
    assert.ok(timeoutIn("connect")(error), String(error));
    assert.deepEqual(attemptResultOf(error), { kind: "timeout", phase: "connect" });
  } finally {
    stalled.close();
  }
});

test("connect timeout: a TLS handshake the server never answers times out in the connect phase", async () => {
  const silent = await startSilentServer();
  const tls = new HttpSender({ policy: createUrlPolicy({ allow: ["127.0.0.1/32"] }), timeouts });
  try {
    const error = await tls
      .send({ ...message("/ok"), url: `https://127.0.0.1:${silent.port}/ok` })
      .catch((e) => e);
    assert.ok(timeoutIn("connect")(error), String(error));
  } finally {
    tls.close();
    await silent.close();
  }
});

test("a refused connection is a typed connection error in the connect phase", async () => {
  const gone = await startMisbehavingServer();
  const url = gone.url("/ok");
  await gone.close();
  const fresh = new HttpSender({ policy, timeouts });
  try {
    const error = await fresh.send({ ...message("/ok"), url }).catch((e) => e);
    assert.ok(
      outboundErrors.is(error, "OUTBOUND_CONNECTION_FAILED") &&
        error.fields.phase === "connect" &&
        error.fields.code === "ECONNREFUSED",
      String(error),
    );
    assert.deepEqual(attemptResultOf(error), {
      kind: "connection_error",
      phase: "connect",
      code: "ECONNREFUSED",
    });
  } finally {
    fresh.close();
  }
});
