/** The load generators' lean HTTP client against a real Node server: statuses, keep-alive, the socket bound, refusals. */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { test } from "node:test";
import { LeanHttpClient, leanGetRequest } from "../src/lean-http-client.ts";

async function serve(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler);
  const sockets = new Set<unknown>();
  server.on("connection", (s) => sockets.add(s));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { port, sockets, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

test("statuses and headers arrive; answers in several chunks are read whole; connections are reused up to maxSockets", async () => {
  let inFlight = 0;
  let most = 0;
  const server = await serve((req, res) => {
    inFlight++;
    most = Math.max(most, inFlight);
    const body = "x".repeat(100_000); // more than one TCP chunk
    setTimeout(() => {
      inFlight--;
      res.writeHead(req.headers.authorization === "Bearer k" ? 200 : 401, { "content-length": body.length });
      res.end(body);
    }, 5);
  });
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 3 });
  try {
    const ok = leanGetRequest("/a?b=1", { authorization: "Bearer k" });
    const statuses = await Promise.all(
      Array.from({ length: 12 }, (_, i) => client.send(i === 5 ? leanGetRequest("/a") : ok)),
    );
    assert.deepEqual(statuses.filter((s) => s === 200).length, 11);
    assert.equal(statuses[5], 401);
    assert.equal(most, 3, "at most maxSockets requests at once");
    assert.equal(server.sockets.size, 3, "three keep-alive connections carried twelve requests");
  } finally {
    client.close();
    await server.close();
  }
});

test("chunked answers are read to their last chunk; an unframed answer, an abort and a header with a line break are refused, named", async () => {
  const server = await serve((req, res) => {
    if (req.url === "/slow") return void setTimeout(() => res.end("late"), 1_000);
    res.writeHead(req.url === "/teapot" ? 418 : 200);
    res.write("a".repeat(70_000)); // chunked: Node knows no length once the head is written
    res.end("b");
  });
  const raw = createNetServer((socket) => socket.end("HTTP/1.1 200 OK\r\n\r\nno length"));
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 2 });
  const unframed = new LeanHttpClient({
    host: "127.0.0.1",
    port: (raw.address() as AddressInfo).port,
    maxSockets: 1,
  });
  try {
    assert.deepEqual(
      await Promise.all(["/a", "/teapot", "/b"].map((path) => client.send(leanGetRequest(path)))),
      [200, 418, 200],
    );
    assert.equal(server.sockets.size, 2, "both connections kept alive after chunked answers");
    await assert.rejects(unframed.send(leanGetRequest("/")), /neither Content-Length nor chunked/);
    await assert.rejects(client.send(leanGetRequest("/slow"), AbortSignal.timeout(50)), {
      name: "TimeoutError",
    });
    assert.throws(() => leanGetRequest("/", { "x-a": "1\r\nx-b: 2" }), /line break/);
  } finally {
    client.close();
    unframed.close();
    raw.close();
    await server.close();
  }
});

test("an idle connection is not reused once the server may have closed it (Keep-Alive: timeout, Connection: close)", async () => {
  const server = await serve((req, res) => {
    if (req.url === "/close") res.setHeader("connection", "close");
    res.end("ok");
  });
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 4 });
  try {
    // Node's server announces `Keep-Alive: timeout=5`: reusable for 4 s.
    assert.equal(await client.send(leanGetRequest("/a")), 200);
    assert.equal(await client.send(leanGetRequest("/a")), 200);
    assert.equal(server.sockets.size, 1, "reused while fresh");
    assert.equal(await client.send(leanGetRequest("/close")), 200);
    assert.equal(await client.send(leanGetRequest("/a")), 200);
    assert.equal(server.sockets.size, 2, "not reused after Connection: close");
  } finally {
    client.close();
    await server.close();
  }
});

test("a request waiting for a connection never goes out on one the server said it will close: a new one carries it (nginx's keepalive_requests)", async () => {
  // Like nginx once a connection has carried keepalive_requests: the answer says
  // `Connection: close` and the server closes the socket right after it.
  let answered = 0;
  const server = await serve((_req, res) => {
    answered++;
    res.setHeader("connection", "close");
    setTimeout(() => res.end("ok"), 2);
  });
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 1 });
  try {
    await client.preconnect(1);
    // One connection, ten requests: nine wait for it and are handed over as each answer lands.
    const statuses = await Promise.all(Array.from({ length: 10 }, () => client.send(leanGetRequest("/a"))));
    assert.deepEqual(
      statuses,
      Array(10).fill(200),
      "every request answered, none failed on a closing socket",
    );
    assert.equal(answered, 10);
    assert.equal(client.opened, 10, "one connection per answer, each opened after the last said close");
  } finally {
    client.close();
    await server.close();
  }
});

test("request() tells its callback the status without a promise; expire() fails what was handed over before a time, in flight or waiting", async () => {
  const server = await serve((req, res) => {
    if (req.url === "/slow") return void setTimeout(() => res.end("late"), 2_000);
    res.end("ok");
  });
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 1 });
  try {
    const first = await new Promise<[number, unknown]>((resolve) =>
      client.request(leanGetRequest("/a"), (status, error) => resolve([status, error])),
    );
    assert.deepEqual(first, [200, undefined]);
    const outcomes: [string, number, unknown][] = [];
    const expired = new Error("expired");
    const settled = new Promise<void>((resolve) => {
      const done = (name: string) => (status: number, error?: unknown) => {
        outcomes.push([name, status, error]);
        if (outcomes.length === 3) resolve();
      };
      client.request(leanGetRequest("/slow"), done("in flight"));
      client.request(leanGetRequest("/a"), done("waiting")); // maxSockets 1: queued behind /slow
      setTimeout(() => {
        client.expire(performance.now(), expired);
        client.request(leanGetRequest("/a"), done("after"));
      }, 50);
    });
    await settled;
    assert.deepEqual(
      outcomes.sort((a, b) => a[0].localeCompare(b[0])),
      [
        ["after", 200, undefined],
        ["in flight", -1, expired],
        ["waiting", -1, expired],
      ],
    );
  } finally {
    client.close();
    await server.close();
  }
});

test("preconnect() opens a warm pool before the first request: requests up to its size open no connection; it stays within maxSockets; a refused one leaves the pool", async () => {
  const server = await serve((_req, res) => setTimeout(() => res.end("ok"), 5));
  const client = new LeanHttpClient({ host: "127.0.0.1", port: server.port, maxSockets: 6 });
  try {
    await client.preconnect(4);
    assert.equal(client.opened, 4);
    const statuses = await Promise.all(Array.from({ length: 4 }, () => client.send(leanGetRequest("/a"))));
    assert.deepEqual(statuses, [200, 200, 200, 200]);
    assert.equal(client.opened, 4, "four requests at once went out on the four pre-opened connections");
    assert.equal(server.sockets.size, 4);
    await client.preconnect(10);
    assert.equal(client.opened, 6, "no more than maxSockets in all");
  } finally {
    client.close();
    await server.close();
  }
  const gone = await serve((_req, res) => res.end("ok"));
  await gone.close(); // nothing listens on its port any more
  const refused = new LeanHttpClient({ host: "127.0.0.1", port: gone.port, maxSockets: 2 });
  try {
    await refused.preconnect(2); // resolves: each connection failed and left the pool
    await assert.rejects(refused.send(leanGetRequest("/a")), /ECONNREFUSED/);
    assert.equal(refused.opened, 3, "the request found no pre-opened connection left and opened its own");
  } finally {
    refused.close();
  }
});
