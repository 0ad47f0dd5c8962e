import assert from "node:assert/strict";
import { connect, createServer, type Server, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { Redis } from "ioredis";
import { type FaultProxy, startFaultProxy } from "../src/fault-proxy.ts";
import { engineFree, requireRedis } from "../src/test-engines.ts";
import { connectErrorCode, eventually } from "./process-helpers.ts";

interface Peer {
  socket: Socket;
  received(): Buffer;
  /** Resolves once at least `bytes` have arrived. */
  waitFor(bytes: number): Promise<Buffer>;
  closed: Promise<Error | undefined>;
}

function open(port: number): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    let waiters: Array<{ bytes: number; resolve: (b: Buffer) => void }> = [];
    const received = () => Buffer.concat(chunks);
    let lastError: Error | undefined;
    socket.on("error", (error) => {
      lastError = error;
    });
    const closed = new Promise<Error | undefined>((r) => socket.once("close", () => r(lastError)));
    socket.on("data", (chunk: Buffer) => {
      chunks.push(chunk);
      const all = received();
      const ready = waiters.filter((w) => all.length >= w.bytes);
      waiters = waiters.filter((w) => all.length < w.bytes);
      for (const w of ready) w.resolve(all);
    });
    const waitFor = (bytes: number) =>
      new Promise<Buffer>((r) => {
        const all = received();
        if (all.length >= bytes) r(all);
        else waiters.push({ bytes, resolve: r });
      });
    socket.once("connect", () => resolve({ socket, received, waitFor, closed }));
    socket.once("error", reject);
  });
}

const echoSockets = new Set<Socket>();

function listenEcho(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => {
    echoSockets.add(s);
    s.once("close", () => echoSockets.delete(s));
    s.on("error", () => {});
    s.pipe(s);
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, port: (server.address() as { port: number }).port }),
    );
  });
}

async function roundTripMs(peer: Peer, payload: string): Promise<number> {
  const start = performance.now();
  const before = peer.received().length;
  peer.socket.write(payload);
  await peer.waitFor(before + payload.length);
  return performance.now() - start;
}

describe("fault proxy over an echo server", () => {
  let echo: { server: Server; port: number };
  let proxy: FaultProxy;
  before(async () => {
    echo = await listenEcho();
  });
  after(async () => {
    for (const socket of echoSockets) socket.destroy();
    await new Promise((r) => echo.server.close(r));
  });
  const fresh = async (maxBufferedBytes?: number) => {
    await proxy?.close();
    proxy = await startFaultProxy({
      upstream: `127.0.0.1:${echo.port}`,
      random: seededRandom("fault-proxy-test"),
      ...(maxBufferedBytes ? { maxBufferedBytes } : {}),
    });
    return proxy;
  };
  after(() => proxy?.close());

  test("passes bytes both ways unchanged, in order even under jittered latency", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    p.setLatency(2, { jitterMs: 10 });
    const peer = await open(p.port);
    const parts = Array.from({ length: 100 }, (_, i) => `<${i}>`);
    for (const part of parts) {
      peer.socket.write(part);
      await new Promise((r) => setImmediate(r)); // separate chunks, so jitter has something to reorder
    }
    const expected = parts.join("");
    assert.equal((await peer.waitFor(expected.length)).toString(), expected);
    assert.equal(p.stats().bytesUp, expected.length);
    assert.equal(p.stats().bytesDown, expected.length);
    peer.socket.destroy();
  });

  test("latency delays a round trip by at least the delay of each direction it is set on", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    const peer = await open(p.port);
    p.setLatency(60);
    assert.ok((await roundTripMs(peer, "a")) >= 120 - 1);
    p.setLatency(0);
    p.setLatency(60, { direction: "up" });
    const oneWay = await roundTripMs(peer, "b");
    assert.ok(oneWay >= 60 - 1, `one-way delay ${oneWay}`);
    peer.socket.destroy();
  });

  test("a holding blackhole delivers nothing until heal, then everything in order", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    const peer = await open(p.port);
    p.blackhole(true);
    peer.socket.write("held-1");
    peer.socket.write("held-2");
    await eventually(() => p.stats().bytesBuffered === 12);
    assert.equal(peer.received().length, 0);
    assert.equal(p.stats().bytesUp, 0);
    await p.heal();
    assert.equal((await peer.waitFor(12)).toString(), "held-1held-2");
    peer.socket.destroy();
  });

  test("a discarding blackhole loses what it reads; after heal new bytes pass", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    const peer = await open(p.port);
    p.blackhole(true, "discard");
    peer.socket.write("lost");
    await eventually(() => p.stats().bytesDropped === 4);
    await p.heal();
    peer.socket.write("kept");
    assert.equal((await peer.waitFor(4)).toString(), "kept");
    peer.socket.destroy();
  });

  test("refuse turns new connections away with ECONNREFUSED, keeps open links, and heals on the same port", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    const peer = await open(p.port);
    await p.refuse(true);
    assert.equal(await connectErrorCode(p.port), "ECONNREFUSED");
    assert.ok((await roundTripMs(peer, "still-open")) >= 0);
    await p.heal();
    const again = await open(p.port);
    assert.ok((await roundTripMs(again, "back")) >= 0);
    peer.socket.destroy();
    again.socket.destroy();
  });

  test("cutAll resets every open link", async (t) => {
    if (engineFree(t)) return;
    const p = await fresh();
    const peers = [await open(p.port), await open(p.port)];
    await roundTripMs(peers[0]!, "x");
    await roundTripMs(peers[1]!, "y");
    assert.equal(p.cutAll(), 2);
    for (const peer of peers)
      assert.equal(((await peer.closed) as NodeJS.ErrnoException)?.code, "ECONNRESET");
    assert.equal(p.stats().active, 0);
  });

  test("a link's queue stays within maxBufferedBytes (the sender meets backpressure) and nothing is lost", async (t) => {
    if (engineFree(t)) return;
    const maxBufferedBytes = 64 * 1024;
    const p = await fresh(maxBufferedBytes);
    const peer = await open(p.port);
    p.blackhole(true);
    // More than the kernel can hold for a paused reader: the sender's buffer grows to
    // net.ipv4.tcp_wmem's max (4 MiB here) and the proxy's socket takes a window more, so a
    // 4 MiB payload could sit wholly in the kernel with nothing left in the sender's queue.
    const payload = Buffer.alloc(16 * 1024 * 1024, "0123456789abcdef");
    peer.socket.write(payload);
    await eventually(() => p.stats().readPauses >= 1);
    // One read past the bound is possible: the bound is checked after each chunk.
    const oneChunk = 64 * 1024;
    assert.ok(p.stats().bytesBuffered <= maxBufferedBytes + oneChunk, `buffered ${p.stats().bytesBuffered}`);
    assert.ok(peer.socket.writableLength > 0, "the sender holds what the proxy would not read");
    await p.heal();
    assert.ok((await peer.waitFor(payload.length)).equals(payload));
    peer.socket.destroy();
  });

  test("a link to a dead upstream is closed; close() refuses the port", async (t) => {
    if (engineFree(t)) return;
    const dead = await startFaultProxy({
      upstream: { host: "127.0.0.1", port: (await listenClosedPort()).port },
    });
    const peer = await open(dead.port);
    await peer.closed;
    await dead.close();
    assert.equal(await connectErrorCode(dead.port), "ECONNREFUSED");
  });
});

/** A port that nothing listens on: listen, then close. */
async function listenClosedPort(): Promise<{ port: number }> {
  const { server, port } = await listenEcho();
  await new Promise((r) => server.close(r));
  return { port };
}

describe("fault proxy in front of real Redis", () => {
  let proxy: FaultProxy;
  let redis: Redis | undefined;
  after(async () => {
    redis?.disconnect();
    await proxy?.close();
  });

  test("latency slows a command, a blackhole makes it time out, cutAll drops the connection", async (t) => {
    const url = await requireRedis(t);
    if (!url) return;
    proxy = await startFaultProxy({ upstream: url });
    redis = new Redis(proxy.rewrite(url), {
      commandTimeout: 400,
      connectTimeout: 2_000,
      maxRetriesPerRequest: 1,
      retryStrategy: (times) => (times > 20 ? null : 20),
    });
    redis.on("error", () => {}); // the cut is reported as ECONNRESET; the test awaits "close" instead
    assert.equal(await redis.ping(), "PONG");

    proxy.setLatency(100);
    const start = performance.now();
    assert.equal(await redis.ping(), "PONG");
    assert.ok(performance.now() - start >= 200 - 1, "a round trip crosses the delay twice");
    proxy.setLatency(0);

    proxy.blackhole(true);
    await assert.rejects(redis.ping(), /timed out/i);
    await proxy.heal();
    assert.equal(await redis.ping(), "PONG");

    const closed = new Promise((r) => redis!.once("close", r));
    assert.equal(proxy.cutAll(), 1);
    await closed;
    assert.equal(await redis.ping(), "PONG", "ioredis reconnects through the proxy");
    assert.equal(proxy.stats().accepted, 2);
  });
});
