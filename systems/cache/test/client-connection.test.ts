/**
 * The client's connection and pool against a cache node in this process (CA-06: the
 * client pools connections and pipelines requests): commands of one event-loop turn
 * leave in one write, replies match callers in order, and every failure is typed and
 * bounded (connect refused, silent node, link cut mid-flight, too many pending).
 */
import assert from "node:assert/strict";
import { createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { freePort } from "@casebook/lab/free-port";
import { CacheClient } from "../src/client/cache-client.ts";
import { clientErrors } from "../src/client/client-errors.ts";
import { NodeConnection } from "../src/client/node-connection.ts";
import { NodePool } from "../src/client/node-pool.ts";
import { ErrorReply } from "../src/client/reply-parser.ts";
import { startCacheNode, type TestNode } from "./cache-node.ts";

/** A TCP server that accepts and then does what `onSocket` says (nothing: a silent node). */
async function rogueServer(onSocket: (socket: Socket) => void): Promise<{ server: Server; port: number }> {
  const server = createServer(onSocket);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { server, port: typeof address === "object" && address ? address.port : 0 };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

describe("client connection and pool against a cache node", () => {
  let node: TestNode;
  before(async () => {
    node = await startCacheNode();
  });
  after(() => node.close());

  test("CA-06 1,000 commands issued in one turn leave in one write and each caller gets its own reply", async () => {
    const connection = new NodeConnection({ host: "127.0.0.1", port: node.port });
    const sets = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => connection.send(["SET", `pipe:${i}`, `v${i}`])),
    );
    assert.ok(sets.every((reply) => reply === "OK"));
    assert.equal(connection.stats.writes, 1, "auto-pipelining: one socket write for the turn");
    const gets = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => connection.send(["GET", `pipe:${i}`])),
    );
    assert.deepEqual(
      gets,
      Array.from({ length: 1_000 }, (_, i) => `v${i}`),
    );
    assert.equal(connection.stats.writes, 2);
    assert.equal(connection.stats.replies, 2_000);
    await connection.close();
    assert.equal(connection.state, "closed");
  });

  test("error replies are values to the connection and typed errors to the typed client", async () => {
    const connection = new NodeConnection({ host: "127.0.0.1", port: node.port });
    await connection.send(["SET", "text", "abc"]);
    const reply = await connection.send(["INCRBY", "text", "1"]);
    assert.ok(reply instanceof ErrorReply && reply.message.startsWith("ERR value is not an integer"));
    await connection.close();
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    await assert.rejects(client.incrby("text", 1), (error) => {
      assert.ok(clientErrors.is(error, "CACHE_CLIENT_SERVER_ERROR"));
      assert.match(String(error.fields.reply), /^ERR value is not an integer/);
      return true;
    });
    await client.close();
  });

  test("a 5 MB value round-trips through one connection, UTF-8 intact", async () => {
    const client = CacheClient.ring({ nodes: [`127.0.0.1:${node.port}`] });
    const big = "é".repeat(2_500_000);
    assert.equal(await client.set("big", big, { exS: 60 }), true);
    assert.equal(await client.get("big"), big);
    assert.equal(await client.del("big"), 1);
    await client.close();
  });

  test("the pool never opens more than connectionsPerNode connections, keeps one key on one, and replaces a dead one", async () => {
    const before = node.server.connectionCount;
    const pool = new NodePool(`127.0.0.1:${node.port}`, { connectionsPerNode: 2 });
    // Affinity = the key's number: INCRs of one key share a socket, so they run in issue order.
    const replies = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => pool.send(["INCR", `count:${i % 7}`], i % 7)),
    );
    replies.forEach((reply, i) => {
      assert.equal(reply, Math.floor(i / 7) + 1, `INCR #${i}`);
    });
    assert.equal(pool.openConnections, 2);
    assert.equal(node.server.connectionCount - before, 2);
    assert.equal(pool.connection(3), pool.connection(5), "affinity modulo the pool size");
    await pool.connection(0).destroy();
    await Promise.all(Array.from({ length: 10 }, (_, i) => pool.send(["PING"], i)));
    assert.equal(pool.openConnections, 2);
    assert.equal(pool.openedTotal, 3, "the destroyed connection was replaced, not resurrected");
    await pool.close();
    await assert.rejects(pool.send(["PING"]), (error) => clientErrors.is(error, "CACHE_CLIENT_CLOSED"));
  });

  test("more than maxPending commands in flight: the extra one fails at once (backpressure)", async () => {
    const connection = new NodeConnection({ host: "127.0.0.1", port: node.port, maxPending: 10 });
    const inFlight = Array.from({ length: 10 }, () => connection.send(["PING"]));
    await assert.rejects(connection.send(["PING"]), (error) =>
      clientErrors.is(error, "CACHE_CLIENT_BACKPRESSURE"),
    );
    assert.deepEqual(await Promise.all(inFlight), new Array(10).fill("PONG"));
    await connection.close();
  });
});

describe("client connection failures", () => {
  test("nothing listening: CACHE_CLIENT_CONNECT_FAILED", async () => {
    const port = await freePort("127.0.0.1");
    const connection = new NodeConnection({ host: "127.0.0.1", port });
    await assert.rejects(connection.send(["PING"]), (error) => {
      assert.ok(clientErrors.is(error, "CACHE_CLIENT_CONNECT_FAILED"));
      assert.equal(error.fields.address, `127.0.0.1:${port}`);
      return true;
    });
  });

  test("a silent node: every pending command fails with CACHE_CLIENT_TIMEOUT (reply phase) and the link closes", async () => {
    const sockets: Socket[] = [];
    const { server, port } = await rogueServer((socket) => {
      sockets.push(socket);
      socket.on("data", () => {}); // reads, never answers
    });
    const connection = new NodeConnection({ host: "127.0.0.1", port, commandTimeoutMs: 100 });
    const results = await Promise.allSettled([connection.send(["GET", "a"]), connection.send(["GET", "b"])]);
    for (const result of results) {
      assert.equal(result.status, "rejected");
      const error = (result as PromiseRejectedResult).reason;
      assert.ok(clientErrors.is(error, "CACHE_CLIENT_TIMEOUT"));
      assert.deepEqual(error.fields, { address: `127.0.0.1:${port}`, phase: "reply", timeoutMs: 100 });
    }
    assert.equal(connection.state, "closed");
    await assert.rejects(connection.send(["PING"]), (error) =>
      clientErrors.is(error, "CACHE_CLIENT_TIMEOUT"),
    );
    for (const socket of sockets) socket.destroy();
    await closeServer(server);
  });

  test("the link cut with commands in flight: CACHE_CLIENT_CONNECTION_LOST (they may have run)", async () => {
    const { server, port } = await rogueServer((socket) => {
      socket.once("data", () => socket.destroy());
    });
    const connection = new NodeConnection({ host: "127.0.0.1", port });
    await assert.rejects(connection.send(["INCR", "n"]), (error) =>
      clientErrors.is(error, "CACHE_CLIENT_CONNECTION_LOST"),
    );
    await closeServer(server);
  });

  test("bytes that are not RESP close the connection with CACHE_CLIENT_PROTOCOL_INVALID", async () => {
    const { server, port } = await rogueServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    });
    const connection = new NodeConnection({ host: "127.0.0.1", port });
    await assert.rejects(connection.send(["PING"]), (error) =>
      clientErrors.is(error, "CACHE_CLIENT_PROTOCOL_INVALID"),
    );
    await closeServer(server);
  });
});
