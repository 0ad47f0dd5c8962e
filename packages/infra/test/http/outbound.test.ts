/**
 * The outbound client against real local servers (node:http on 127.0.0.1, lab's
 * misbehaving server and fault proxy): each phase's timeout and its typed error, the
 * overall deadline, the caller's AbortSignal, the body bounds, refused and reset
 * connections, a blackholed link, keep-alive reuse, redirects not followed. Timeouts are
 * short (hundreds of ms) and each test waits for the event it asserts, never a sleep.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import type { CasebookError } from "@casebook/kit/errors";
import { startFaultProxy } from "@casebook/lab/fault-proxy";
import {
  type MisbehavingServer,
  startMisbehavingServer,
  startSilentServer,
} from "@casebook/lab/misbehaving-http-server";
import { OutboundClient, type OutboundClientOptions } from "../../src/http/outbound.ts";
import {
  mayHaveBeenProcessed,
  type OutboundErrorCode,
  outboundErrors,
  phaseOf,
} from "../../src/http/outbound-errors.ts";

const timeouts = { connectMs: 300, headersMs: 300, bodyMs: 300 };
let server: MisbehavingServer;
let client: OutboundClient;

before(async () => {
  server = await startMisbehavingServer();
  client = new OutboundClient({ addressGuard: "off", timeouts, userAgent: "casebook-test/1" });
});

after(async () => {
  client.close();
  await server.close();
});

/** Runs `call` with a fresh client (closed after) and returns what it rejected with. */
async function failure(
  options: Partial<OutboundClientOptions>,
  call: (c: OutboundClient) => Promise<unknown>,
): Promise<CasebookError> {
  const fresh = new OutboundClient({ addressGuard: "off", timeouts, ...options });
  try {
    const result = await call(fresh).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    assert.ok("error" in result, `expected a rejection, got ${JSON.stringify(result)}`);
    assert.ok(outboundErrors.is(result.error), String(result.error));
    return result.error;
  } finally {
    fresh.close();
  }
}

function assertCode(error: CasebookError, code: OutboundErrorCode, phase: string): void {
  assert.equal(error.code, code, error.message);
  assert.equal(phaseOf(error), phase);
}

test("a POST: status, body, phase timings, Content-Length and User-Agent sent; the next call reuses the socket", async () => {
  const first = await client.request({ method: "POST", url: server.url("/ok"), body: "hello" });
  assert.equal(first.status, 200);
  assert.equal(first.body.toString("utf8"), "ok 5");
  assert.deepEqual([first.bodyBytes, first.bodyTruncated], [4, false]);
  assert.equal(first.remoteAddress, "127.0.0.1");
  assert.ok(first.durationMs >= first.timings.headersMs);
  const got = server.received.at(-1)!;
  assert.equal(got.headers["content-length"], "5");
  assert.equal(got.headers["user-agent"], "casebook-test/1");
  const second = await client.request({ method: "GET", url: new URL(server.url("/ok")) });
  assert.equal(second.reusedSocket, true, "keep-alive: no new handshake per call");
});

test("3xx is returned, never followed", async () => {
  const before = server.received.length;
  const response = await client.request({ method: "GET", url: server.url("/redirect") });
  assert.equal(response.status, 302);
  assert.equal(response.headers.location, "/target");
  assert.deepEqual(
    server.received.slice(before).map((r) => r.path),
    ["/redirect"],
  );
});

test("a server that stalls before the head: OUTBOUND_HEADERS_TIMEOUT, an unknown outcome", async () => {
  const error = await failure({}, (c) =>
    c.request({ method: "POST", url: server.url("/slow-headers"), body: "{}" }),
  );
  assertCode(error, "OUTBOUND_HEADERS_TIMEOUT", "headers");
  assert.equal(error.fields.timeoutMs, 300);
  assert.equal(error.fields.host, `127.0.0.1:${server.port}`);
  assert.equal(mayHaveBeenProcessed(error), true, "the request went out");
});

test("a server that stalls mid-body: OUTBOUND_BODY_TIMEOUT, even after a 200 head", async () => {
  const error = await failure({}, (c) => c.request({ method: "GET", url: server.url("/slow-body") }));
  assertCode(error, "OUTBOUND_BODY_TIMEOUT", "body");
  assert.equal(error.fields.timeoutMs, 300);
});

test("a server that sends too much: OUTBOUND_RESPONSE_TOO_LARGE, declared or streamed; reading stops", async () => {
  const declared = await failure({ maxResponseBytes: 64 * 1024 }, (c) =>
    c.request({ method: "GET", url: server.url("/big") }),
  );
  assertCode(declared, "OUTBOUND_RESPONSE_TOO_LARGE", "body");
  assert.equal(declared.fields.limitBytes, 64 * 1024);
  const streamed = await failure({ maxResponseBytes: 100 * 1024 }, (c) =>
    c.request({ method: "GET", url: server.url("/big-chunked") }),
  );
  assertCode(streamed, "OUTBOUND_RESPONSE_TOO_LARGE", "body");
});

test("a small body over the bound, read whole in one chunk: rejected, and nothing thrown at its pooled socket", async (t) => {
  // The socket is back in the keep-alive pool before the body's one chunk is handed over; an
  // error destroyed into it had no listener and killed the process (uncaughtException).
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  process.on("uncaughtException", onUncaught);
  t.after(() => process.off("uncaughtException", onUncaught));
  const small = createServer((_req, res) => {
    res.writeHead(200);
    res.end("x".repeat(8_192));
  });
  await new Promise<void>((resolve) => small.listen(0, "127.0.0.1", resolve));
  t.after(() => small.close());
  const port = (small.address() as { port: number }).port;
  const error = await failure({ maxResponseBytes: 4_096 }, (c) =>
    c.request({ method: "GET", url: `http://127.0.0.1:${port}/` }),
  );
  assertCode(error, "OUTBOUND_RESPONSE_TOO_LARGE", "body");
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.deepEqual(uncaught, []);
});

test("responseOverflow truncate: read up to the bound, keep a prefix, then drop the connection", async () => {
  const truncating = new OutboundClient({
    addressGuard: "off",
    timeouts,
    maxResponseBytes: 64 * 1024,
    responseOverflow: "truncate",
    keptResponseBytes: 32,
  });
  try {
    for (const path of ["/big", "/big-chunked"]) {
      const response = await truncating.request({ method: "GET", url: server.url(path) });
      assert.equal(response.status, 200);
      assert.deepEqual([response.bodyTruncated, response.bodyBytes], [true, 64 * 1024], path);
      assert.equal(response.body.toString("utf8"), "x".repeat(32));
    }
    const small = await truncating.request({ method: "GET", url: server.url("/ok") });
    assert.deepEqual([small.body.toString("utf8"), small.bodyTruncated], ["ok 0", false]);
  } finally {
    truncating.close();
  }
});

test("a request body over maxRequestBytes is refused before anything is sent", async () => {
  const before = server.received.length;
  const error = await failure({ maxRequestBytes: 10 }, (c) =>
    c.request({ method: "POST", url: server.url("/ok"), body: Buffer.alloc(11) }),
  );
  assertCode(error, "OUTBOUND_REQUEST_TOO_LARGE", "policy");
  assert.deepEqual([error.fields.limitBytes, error.fields.bytes], [10, 11]);
  assert.equal(server.received.length, before);
});

test("a refused port: OUTBOUND_CONNECTION_FAILED in the connect phase, nothing sent", async () => {
  const gone = await startMisbehavingServer();
  const url = gone.url("/ok");
  await gone.close();
  const error = await failure({}, (c) => c.request({ method: "POST", url, body: "{}" }));
  assertCode(error, "OUTBOUND_CONNECTION_FAILED", "connect");
  assert.equal(error.fields.code, "ECONNREFUSED");
  assert.ok(error.cause instanceof Error, "the socket error as cause");
  assert.equal(mayHaveBeenProcessed(error), false);
});

test("a connection reset after the request, before the head: OUTBOUND_CONNECTION_FAILED in the headers phase", async () => {
  const error = await failure({}, (c) =>
    c.request({ method: "POST", url: server.url("/reset-headers"), body: "{}" }),
  );
  assertCode(error, "OUTBOUND_CONNECTION_FAILED", "headers");
  assert.equal(mayHaveBeenProcessed(error), true, "the request went out: an unknown outcome, not a retry");
});

test("a connection reset mid-body: OUTBOUND_CONNECTION_FAILED in the body phase", async () => {
  const error = await failure({}, (c) => c.request({ method: "GET", url: server.url("/reset-body") }));
  assertCode(error, "OUTBOUND_CONNECTION_FAILED", "body");
  assert.equal(mayHaveBeenProcessed(error), true);
});

test("a blackholed link (fault proxy): plain http times out waiting for the head, https in the connect phase", async () => {
  const proxy = await startFaultProxy({ upstream: `127.0.0.1:${server.port}` });
  try {
    proxy.blackhole(true);
    // The proxy accepts the TCP connection, then nothing passes: the request is out, no answer.
    const http = await failure({}, (c) =>
      c.request({ method: "POST", url: `${proxy.url("http")}/ok`, body: "{}" }),
    );
    assertCode(http, "OUTBOUND_HEADERS_TIMEOUT", "headers");
    // Over TLS the ClientHello is held: the connection never becomes usable, nothing was sent.
    const https = await failure({}, (c) =>
      c.request({ method: "POST", url: `${proxy.url("https")}/ok`, body: "{}" }),
    );
    assertCode(https, "OUTBOUND_CONNECT_TIMEOUT", "connect");
    assert.equal(mayHaveBeenProcessed(https), false);
  } finally {
    await proxy.close();
  }
});

test("a TLS handshake the server never answers: OUTBOUND_CONNECT_TIMEOUT", async () => {
  const silent = await startSilentServer();
  try {
    const error = await failure({}, (c) =>
      c.request({ method: "GET", url: `https://127.0.0.1:${silent.port}/` }),
    );
    assertCode(error, "OUTBOUND_CONNECT_TIMEOUT", "connect");
    assert.equal(error.fields.timeoutMs, 300);
  } finally {
    await silent.close();
  }
});

test("the overall deadline ends a call inside a phase that has time left, naming the phase", async () => {
  const slow = { connectMs: 2_000, headersMs: 2_000, bodyMs: 2_000 };
  const perClient = await failure({ timeouts: slow, deadlineMs: 150 }, (c) =>
    c.request({ method: "GET", url: server.url("/slow-headers") }),
  );
  assertCode(perClient, "OUTBOUND_DEADLINE_EXCEEDED", "headers");
  assert.equal(perClient.fields.deadlineMs, 150);
  const perCall = await failure({ timeouts: slow, deadlineMs: 10_000 }, (c) =>
    c.request({ method: "GET", url: server.url("/slow-body"), deadlineMs: 150 }),
  );
  assertCode(perCall, "OUTBOUND_DEADLINE_EXCEEDED", "body");
});

test("the caller's AbortSignal ends a call in flight (cause: its reason); an aborted signal sends nothing", async () => {
  const controller = new AbortController();
  const reason = new Error("shutting down");
  const pending = failure({}, (c) =>
    c.request({ method: "GET", url: server.url("/slow-headers"), signal: controller.signal }),
  );
  // Abort once the request has reached the server: the event asserted, not a sleep.
  const seen = server.received.length;
  for (let i = 0; i < 200 && server.received.length === seen; i++) await new Promise((r) => setImmediate(r));
  controller.abort(reason);
  const error = await pending;
  assertCode(error, "OUTBOUND_ABORTED", "headers");
  assert.equal(error.cause, reason);
  const before = server.received.length;
  const early = await failure({}, (c) =>
    c.request({ method: "GET", url: server.url("/ok"), signal: AbortSignal.abort(reason) }),
  );
  assertCode(early, "OUTBOUND_ABORTED", "policy");
  assert.equal(server.received.length, before);
});

test("a URL that is not absolute http(s) is refused", async () => {
  for (const url of ["not a url", "ftp://127.0.0.1/x", "file:///etc/passwd"]) {
    const error = await failure({}, (c) => c.request({ method: "GET", url }));
    assertCode(error, "OUTBOUND_URL_INVALID", "policy");
  }
});

test("options are checked: a timeout or a bound that is not > 0 fails at construction", () => {
  assert.throws(() => new OutboundClient({ addressGuard: "off", timeouts: { headersMs: 0 } }), RangeError);
  assert.throws(() => new OutboundClient({ addressGuard: "off", deadlineMs: Number.NaN }), RangeError);
  assert.throws(() => new OutboundClient({ addressGuard: "off", maxResponseBytes: -1 }), RangeError);
  assert.throws(() => new OutboundClient({ addressGuard: "off", pool: { maxOrigins: 0 } }), RangeError);
});
