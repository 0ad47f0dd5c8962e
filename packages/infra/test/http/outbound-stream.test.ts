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
/** /flood's body, and how much of it the server has handed to its socket so far. */
const FLOOD_BYTES = 256 * 1024 * 1024;
let flooded = 0;
/** Requests /count has seen. */
let counted = 0;
let base: string;
const client = new OutboundClient({
  addressGuard: "off",
  timeouts: { connectMs: 5_000, headersMs: 5_000, bodyMs: 5_000 },
});

before(async () => {
  server = createServer(async (req, res) => {
    if (req.url === "/headers") {
      res.writeHead(200, [
        ["set-cookie", "a=1"],
        ["set-cookie", "b=2"],
        ["x-repeated", "one"],
        ["x-repeated", "two"],
      ]);
      res.end("data: 0\n\n");
      return;
    }
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
    } else if (req.url === "/flood") {
      // As fast as the socket takes it: how much leaves depends on the reader's pace.
      const chunk = Buffer.alloc(64 * 1024, 120);
      flooded = 0;
      const pump = () => {
        while (flooded < FLOOD_BYTES) {
          flooded += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      pump();
    } else if (req.url === "/count") {
      counted++;
      res.end("data: 0\n\n");
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

test("a cut stream first delivers what came before the cut, then the error (ECONNRESET, as node:http says it)", async () => {
  const res = await client.stream({
    method: "GET",
    url: `${base}/cut`,
    idleMs: 2_000,
    maxStreamBytes: 1_000,
  });
  const chunks: string[] = [];
  await assert.rejects(
    (async () => {
      for await (const chunk of res.body) chunks.push(chunk.toString());
    })(),
    (error: unknown) =>
      outboundErrors.is(error, "OUTBOUND_CONNECTION_FAILED") &&
      error.fields.code === "ECONNRESET" &&
      error.fields.phase === "body",
  );
  assert.deepEqual(chunks, ["data: 0\n\n"]);
});

test("a slow reader pauses the socket: the sender is held back, the body still arrives whole", async () => {
  const res = await client.stream({
    method: "GET",
    url: `${base}/flood`,
    idleMs: 5_000,
    maxStreamBytes: FLOOD_BYTES,
  });
  const iterator = res.body[Symbol.asyncIterator]();
  let read = (await iterator.next()).value?.length ?? 0;
  // The reader stops. Paused, the socket's buffers fill and the server's writes stall; unpaused,
  // the client would go on taking the body into memory and the server on sending it.
  await sleep(300);
  const stalledAt = flooded;
  await sleep(300);
  assert.equal(
    flooded,
    stalledAt,
    `the server went on writing while nobody read: ${stalledAt} → ${flooded} bytes`,
  );
  assert.ok(
    stalledAt < FLOOD_BYTES / 8,
    `the server wrote ${stalledAt} of ${FLOOD_BYTES} bytes while nobody read`,
  );
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) read += next.value.length;
  assert.equal(read, FLOOD_BYTES);
});

test("the response head as node:http gives it: set-cookie a list, a repeated field joined, timings by phase", async () => {
  const res = await client.stream({
    method: "GET",
    url: `${base}/headers`,
    idleMs: 2_000,
    maxStreamBytes: 1_000,
  });
  for await (const _ of res.body) {
    // drained
  }
  assert.equal(res.status, 200);
  assert.deepEqual(res.headers["set-cookie"], ["a=1", "b=2"]);
  assert.equal(res.headers["x-repeated"], "one, two");
  assert.ok(res.timings.headersMs >= 0 && res.timings.connectMs >= 0);
});

test("a call that timed out waiting for a pooled socket is never sent, even once the socket frees", async () => {
  const narrow = new OutboundClient({
    addressGuard: "off",
    timeouts: { connectMs: 150, headersMs: 5_000, bodyMs: 5_000 },
    pool: { maxSocketsPerOrigin: 1 },
  });
  try {
    const holder = await narrow.stream({
      method: "GET",
      url: `${base}/open`,
      idleMs: 5_000,
      maxStreamBytes: 1_000,
    });
    const before = counted;
    await assert.rejects(
      narrow.stream({
        method: "POST",
        url: `${base}/count`,
        body: "x",
        idleMs: 5_000,
        maxStreamBytes: 1_000,
      }),
      (error: unknown) =>
        outboundErrors.is(error, "OUTBOUND_CONNECT_TIMEOUT") && error.fields.phase === "connect",
    );
    holder.close(); // the socket frees: the queued call reaches it and must be dropped unsent
    await sleep(200);
    assert.equal(counted, before, "the timed-out call reached the server");
    const after = await narrow.stream({
      method: "GET",
      url: `${base}/count`,
      idleMs: 5_000,
      maxStreamBytes: 1_000,
    });
    for await (const _ of after.body) {
      // drained
    }
    assert.equal(counted, before + 1, "the pool still serves the next call");
  } finally {
    narrow.close();
  }
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
