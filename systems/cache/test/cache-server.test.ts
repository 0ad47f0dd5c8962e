/**
 * The TCP server's behaviour as a client sees it: pipelined batches, inline commands,
 * protocol errors (answer, then close — as Redis does), the connection limit,
 * backpressure against a client that does not read, QUIT/RESET/HELLO, and a graceful
 * close that still delivers replies already owed.
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { Redis } from "ioredis";
import { rawExchange, rawRequest, startCacheNode } from "./cache-node.ts";

/** Bound on any wait for the server to reach a state. */
const WAIT_LIMIT_MS = 10_000;

async function waitFor(what: string, condition: () => boolean): Promise<void> {
  await eventually(condition, { what, timeoutMs: WAIT_LIMIT_MS, intervalMs: 0 });
}

function multibulk(...args: string[]): string {
  return `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a, "latin1")}\r\n${a}\r\n`).join("")}`;
}

const countReplies = (text: string, line: string) => text.split(line).length - 1;

describe("cache server", () => {
  test("a pipeline of 1 000 commands in one write gets 1 000 replies, in order", async () => {
    const node = await startCacheNode();
    try {
      let request = "";
      for (let i = 0; i < 500; i++) request += multibulk("SET", `k${i}`, `v${i}`) + multibulk("GET", `k${i}`);
      const reply = await rawRequest(node.port, request, (r) => countReplies(r, "\r\n") >= 500 + 1_000);
      let expected = "";
      for (let i = 0; i < 500; i++) expected += `+OK\r\n$${`v${i}`.length}\r\nv${i}\r\n`;
      assert.equal(reply, expected);
    } finally {
      await node.close();
    }
  });

  test("inline commands work, as telnet sends them", async () => {
    const node = await startCacheNode();
    try {
      const reply = await rawRequest(
        node.port,
        'SET greeting "hello world"\r\nGET greeting\r\nPING\r\n',
        (r) => r.endsWith("+PONG\r\n"),
      );
      assert.equal(reply, "+OK\r\n$11\r\nhello world\r\n+PONG\r\n");
    } finally {
      await node.close();
    }
  });

  test("a protocol error answers the commands before it, then -ERR Protocol error, then closes", async () => {
    const node = await startCacheNode();
    try {
      const { reply, closedByServer } = await rawExchange(
        node.port,
        `${multibulk("PING")}*1\r\n+oops\r\n${multibulk("PING")}`,
      );
      assert.equal(reply, "+PONG\r\n-ERR Protocol error: expected '$', got '+'\r\n");
      assert.ok(closedByServer);
      await waitFor("the server to drop the connection", () => node.server.connectionCount === 0);
    } finally {
      await node.close();
    }
  });

  test("a request beyond the query buffer limit is refused and the connection closed", async () => {
    const node = await startCacheNode({
      limits: {
        maxBulkBytes: 1_000_000,
        maxMultibulkCount: 16,
        maxInlineBytes: 1_024,
        maxQueryBytes: 100_000,
      },
    });
    try {
      const { reply, closedByServer } = await rawExchange(
        node.port,
        `*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$500000\r\n${"x".repeat(200_000)}`,
      );
      assert.match(reply, /^-ERR Protocol error: query buffer limit of 100000 bytes exceeded\r\n$/);
      assert.ok(closedByServer);
    } finally {
      await node.close();
    }
  });

  test("past maxclients a connection gets -ERR max number of clients reached", async () => {
    const node = await startCacheNode({ maxClients: 2 });
    const clients = [0, 1].map(
      () => new Redis({ port: node.port, lazyConnect: true, maxRetriesPerRequest: 0 }),
    );
    try {
      await Promise.all(clients.map((c) => c.connect()));
      const { reply, closedByServer } = await rawExchange(node.port, multibulk("PING"));
      assert.equal(reply, "-ERR max number of clients reached\r\n");
      assert.ok(closedByServer);
      assert.equal(node.server.stats().rejectedConnections, 1);
      assert.equal(await clients[0]!.ping(), "PONG", "the clients inside are unaffected");
    } finally {
      for (const c of clients) c.disconnect();
      await node.close();
    }
  });

  test("backpressure: a client that does not read makes the server stop reading it, within the output bound", async () => {
    const maxPendingOutputBytes = 1024 * 1024;
    const maxBatchOutputBytes = 256 * 1024;
    const node = await startCacheNode({ server: { maxPendingOutputBytes, maxBatchOutputBytes } });
    const value = "v".repeat(100_000);
    node.keyspace.set("big", value, 0);
    const requests = 2_000; // 200 MB of replies if the server buffered them all
    const socket = connect({ host: "127.0.0.1", port: node.port });
    try {
      await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
      socket.pause(); // the client reads nothing
      socket.write(multibulk("GET", "big").repeat(requests));
      await waitFor(
        "the server to pause the client",
        () => node.server.outputStats().pausedConnections === 1,
      );
      const stalled = node.server.outputStats();
      assert.ok(
        stalled.pendingOutputBytes <= maxPendingOutputBytes + maxBatchOutputBytes,
        `${stalled.pendingOutputBytes} B pending`,
      );
      assert.ok(node.server.stats().totalCommands < requests, "it stopped running that client's commands");
      // Now the client reads: every reply arrives, complete and in order.
      let received = 0;
      const replyBytes = `$100000\r\n${value}\r\n`.length;
      const done = new Promise<void>((resolve) => {
        socket.on("data", (chunk: Buffer) => {
          received += chunk.length;
          if (received >= requests * replyBytes) resolve();
        });
      });
      socket.resume();
      await done;
      assert.equal(received, requests * replyBytes);
      assert.equal(node.server.stats().totalCommands, requests);
    } finally {
      socket.destroy();
      await node.close();
    }
  });

  test("QUIT answers OK and closes; RESET returns the connection to RESP2", async () => {
    const node = await startCacheNode();
    try {
      const quit = await rawExchange(node.port, multibulk("QUIT") + multibulk("PING"));
      assert.equal(quit.reply, "+OK\r\n");
      assert.ok(quit.closedByServer);
      const reset = await rawRequest(
        node.port,
        multibulk("HELLO", "3") +
          multibulk("GET", "missing") +
          multibulk("RESET") +
          multibulk("GET", "missing"),
        (r) => r.endsWith("+RESET\r\n$-1\r\n"),
      );
      assert.match(reset, /^%7\r\n/);
      assert.ok(reset.includes("_\r\n+RESET\r\n$-1\r\n"), "RESP3 null before RESET, RESP2 null after");
    } finally {
      await node.close();
    }
  });

  test("close() delivers replies already owed, then closes every connection and refuses new ones", async () => {
    const node = await startCacheNode();
    const redis = new Redis({
      port: node.port,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    await redis.connect();
    const pipeline = redis.pipeline();
    for (let i = 0; i < 1_000; i++) pipeline.set(`k${i}`, "v");
    const results = pipeline.exec();
    await waitFor("the pipeline to be processed", () => node.keyspace.size === 1_000);
    await node.close();
    const replies = (await results)!;
    assert.equal(replies.filter(([error, value]) => error === null && value === "OK").length, 1_000);
    assert.equal(node.server.connectionCount, 0);
    await assert.rejects(rawExchange(node.port, multibulk("PING")), { code: "ECONNREFUSED" });
    redis.disconnect();
  });
});
