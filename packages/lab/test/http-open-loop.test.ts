/**
 * The open-loop HTTP generator in processes of its own (http-open-loop-child.ts, driven by
 * http-open-loop-processes.ts) against a local HTTP server: the stride over the request list,
 * each request's headers, statuses outside okStatuses counted as errors, and the processes'
 * histograms merged into one run.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import {
  type HttpOpenLoopCommand,
  type HttpOpenLoopResult,
  httpOpenLoopChildEntry,
} from "@casebook/lab/http-open-loop-child";
import { startHttpOpenLoop } from "@casebook/lab/http-open-loop-processes";
import { spawnChild } from "@casebook/lab/spawn-child";

async function localServer(t: { after(fn: () => void): void }, seen: string[], connections = { count: 0 }) {
  const server = createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization}`);
    res.writeHead(req.url === "/bad" ? 500 : req.url === "/moved" ? 302 : 200).end("{}");
  });
  server.on("connection", () => connections.count++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test("a generator child sends its stride of the requests with their headers, and answers its counts and latencies", async (t) => {
  const seen: string[] = [];
  const url = await localServer(t, seen);
  const child = await spawnChild(httpOpenLoopChildEntry, { ready: /"ready"/, test: t });
  const command: HttpOpenLoopCommand = {
    cmd: "run",
    url,
    requests: ["/a", "/b", "/c", "/bad"].map((path) => ({
      path,
      headers: { authorization: `Bearer ${path}` },
    })),
    okStatuses: [200, 206],
    first: 1,
    stride: 2,
    ratePerS: 100,
    durationMs: 1_000,
    warmupMs: 200,
  };
  child.send(JSON.stringify(command));
  const result = JSON.parse(await child.nextLine()) as HttpOpenLoopResult;
  await child.stop({ line: JSON.stringify({ cmd: "close" }) });
  // Requests 1, 3, 1, 3, …: "/b" and "/bad" in turn, each with its own header; "/bad" is an error.
  assert.deepEqual(new Set(seen), new Set(["/b Bearer /b", "/bad Bearer /bad"]));
  assert.equal(result.asked, 100);
  assert.equal(result.dropped, 0);
  assert.equal(result.count, result.ok + result.errors);
  assert.ok(result.errors > 0 && result.ok > 0, JSON.stringify(result));
  assert.equal(
    result.buckets.reduce((sum, [, count]) => sum + count, 0),
    result.count,
  );
});

test("two generator processes share the rate, the list and the pool; their run is one: rates summed, errors counted, the fixed pool opened first", async (t) => {
  const seen: string[] = [];
  const connections = { count: 0 };
  const url = await localServer(t, seen, connections);
  const load = await startHttpOpenLoop({ processes: 2 });
  t.after(() => load.close());
  const run = await load.run({
    url,
    requests: [{ path: "/moved" }, { path: "/a" }],
    okStatuses: [302],
    ratePerS: 200,
    durationMs: 1_000,
    warmupMs: 200,
    connections: 7,
  });
  // Child 0 sends requests 0, 2, 4, … ("/moved"), child 1 sends 1, 3, … ("/a": 200, not ok here).
  assert.deepEqual(new Set(seen), new Set(["/moved undefined", "/a undefined"]));
  assert.equal(run.askedPerS, 200);
  assert.equal(run.dropped, 0);
  assert.ok(run.errors > 0, "the 200s are errors when only 302 is ok");
  assert.ok(run.sentPerS > 100 && run.sentPerS < 300, JSON.stringify(run));
  assert.ok(run.p99Ms > 0 && Number.isFinite(run.p99Ms), JSON.stringify(run));
  assert.equal(
    run.connectionsOpened,
    7,
    "a fixed pool of seven, four and three, opened before the first send",
  );
  assert.equal(connections.count, 7, "the connections the server accepted");
  await assert.rejects(
    load.run({
      url,
      requests: [{ path: "/a" }],
      okStatuses: [200],
      ratePerS: 10,
      durationMs: 200,
      warmupMs: 0,
      connections: 1,
    }),
    /connections must be an integer ≥ 2 \(one per process\), got 1/,
  );
});
