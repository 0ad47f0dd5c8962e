import assert from "node:assert/strict";
import { connect } from "node:net";
import { test } from "node:test";
import { createService } from "../../src/http/service.ts";

/** Writes raw bytes to the service and resolves with everything it answers before closing. */
function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port }, () => socket.write(bytes));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
  });
}

function parseRaw(answer: string): { statusLine: string; headers: string; problem: Record<string, unknown> } {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  const [statusLine = "", ...headers] = head.split("\r\n");
  return { statusLine, headers: headers.join("\n").toLowerCase(), problem: JSON.parse(body) };
}

test("HTTP the server cannot parse is answered 400 REQUEST_MALFORMED as problem+json, then closed", async (t) => {
  const service = createService({
    name: "raw",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  const { url } = await service.listen({ port: 0 });
  const { statusLine, headers, problem } = parseRaw(
    await rawExchange(Number(new URL(url).port), "BLAH\r\n\r\n"),
  );
  assert.equal(statusLine, "HTTP/1.1 400 Bad Request");
  assert.match(headers, /content-type: application\/problem\+json/);
  assert.match(headers, /connection: close/);
  assert.equal(problem.code, "REQUEST_MALFORMED");
  assert.match(headers, new RegExp(`x-request-id: ${problem.requestId}`));
});

test("oversized headers are answered 431 REQUEST_HEADERS_TOO_LARGE", async (t) => {
  const service = createService({
    name: "raw",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  const { url } = await service.listen({ port: 0 });
  const request = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`;
  const { statusLine, problem } = parseRaw(await rawExchange(Number(new URL(url).port), request));
  assert.equal(statusLine, "HTTP/1.1 431 Request Header Fields Too Large");
  assert.equal(problem.code, "REQUEST_HEADERS_TOO_LARGE");
});

test("a client that stops mid-headers gets 408 REQUEST_TIMEOUT once headersTimeoutMs passes", async (t) => {
  const service = createService({
    name: "raw",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
    timeouts: { headersTimeoutMs: 100, requestTimeoutMs: 200, timeoutCheckIntervalMs: 20 },
  });
  t.after(() => service.close());
  const { url } = await service.listen({ port: 0 });
  const slowloris = "GET /healthz HTTP/1.1\r\nHost: x\r\n"; // never finishes its headers
  const { statusLine, problem } = parseRaw(await rawExchange(Number(new URL(url).port), slowloris));
  assert.equal(statusLine, "HTTP/1.1 408 Request Timeout");
  assert.equal(problem.code, "REQUEST_TIMEOUT");
});

test("a URL with broken percent-encoding is 400 REQUEST_MALFORMED", async (t) => {
  const service = createService({
    name: "url",
    version: "0",
    log: { level: "silent" },
    defaultMetrics: false,
  });
  t.after(() => service.close());
  service.app.get("/items/:id", async () => ({}));
  const res = await service.app.inject({ url: "/items/%E0%A4%A" });
  assert.equal(res.statusCode, 400);
  assert.equal(res.json().code, "REQUEST_MALFORMED");
  assert.ok(res.headers["x-request-id"]);
});
