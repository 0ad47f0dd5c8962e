/**
 * OutboundClient.stream: a body read chunk by chunk as it arrives (an LLM's SSE stream), with
 * an idle bound between chunks instead of one on the whole body, a byte bound, the caller's
 * abort, and a connection closed before the body's end reported as an error, never a clean end.
 */
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { OutboundClient } from "../../src/http/outbound.ts";
import { outboundErrors } from "../../src/http/outbound-errors.ts";

let server: Server;
let base: string;
const client = new OutboundClient({
  addressGuard: "off",
  timeouts: { connectMs: 5_000, headersMs: 5_000, bodyMs: 5_000 },
});

before(async () => {
  server = createServer(async (req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.flushHeaders();
    if (req.url === "/paced") {
      for (let i = 0; i < 3; i++) {
        res.write(`data: ${i}\n\n`);
        await sleep(150);
      }
      res.end();
    } else if (req.url === "/silent") {
      res.write("data: 0\n\n");
    } else if (req.url === "/cut") {
      res.write("data: 0\n\n", () => res.socket?.end(() => res.socket?.destroy()));
    } else if (req.url === "/big") {
      res.end("x".repeat(10_000));
    } else {
      res.write("data: 0\n\n");
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  client.close();
  server.closeAllConnections();
  server.close();
});

async function drain(
  url: string,
  options: { idleMs?: number; maxStreamBytes?: number; signal?: AbortSignal } = {},
) {
  const res = await client.stream({
    method: "GET",
    url,
    idleMs: options.idleMs ?? 2_000,
    maxStreamBytes: options.maxStreamBytes ?? 1_000_000,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const chunks: string[] = [];
  for await (const chunk of res.body) chunks.push(chunk.toString());
  return chunks;
}

test("a paced body arrives chunk by chunk; pauses shorter than the idle bound pass, the whole may be longer", async () => {
  const chunks = await drain(`${base}/paced`, { idleMs: 2_000 });
  assert.equal(chunks.length, 3);
});

test("silence past the idle bound fails with OUTBOUND_BODY_TIMEOUT", async () => {
  await assert.rejects(drain(`${base}/silent`, { idleMs: 200 }), (error: unknown) =>
    outboundErrors.is(error, "OUTBOUND_BODY_TIMEOUT"),
  );
});

test("a connection closed before the body's end is OUTBOUND_CONNECTION_FAILED, not an end", async () => {
  await assert.rejects(drain(`${base}/cut`), (error: unknown) =>
    outboundErrors.is(error, "OUTBOUND_CONNECTION_FAILED"),
  );
});

test("past maxStreamBytes the stream fails with OUTBOUND_RESPONSE_TOO_LARGE", async () => {
  await assert.rejects(drain(`${base}/big`, { maxStreamBytes: 1_000 }), (error: unknown) =>
    outboundErrors.is(error, "OUTBOUND_RESPONSE_TOO_LARGE"),
  );
});

test("the caller's abort ends the body with OUTBOUND_ABORTED", async () => {
  const controller = new AbortController();
  const reading = drain(`${base}/open`, { signal: controller.signal, idleMs: 10_000 });
  setTimeout(() => controller.abort(), 100);
  await assert.rejects(reading, (error: unknown) => outboundErrors.is(error, "OUTBOUND_ABORTED"));
});
