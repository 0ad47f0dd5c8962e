/**
 * The bench's parts that can break without running it (a run needs both engines, wrk and
 * minutes): its flags — defaults, the scenario subset, bounds refused by name — and its
 * open-loop generator process (bench/read-load-child.ts) against a local HTTP server.
 */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { spawnChild } from "@casebook/lab/spawn-child";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";
import type { ReadLoadCommand, ReadLoadResult } from "../bench/read-load-child.ts";

test("the bench's flags: both scenarios by default, a subset by name, bounds refused by name", () => {
  const defaults = parseBenchArgs([]);
  assert.deepEqual(defaults.scenarios, ["reads", "fanout"]);
  assert.equal(defaults.users, 20_000);
  assert.equal(defaults.celebrityFollowers, 1_000);
  assert.deepEqual(parseBenchArgs(["--scenarios", "reads"]).scenarios, ["reads"]);
  assert.throws(() => parseBenchArgs(["--scenarios", "writes"]), /scenarios/);
  assert.throws(() => parseBenchArgs(["--duration-s", "0"]), /duration/);
  assert.match(benchHelp, /pure pull/);
});

test("the open-loop generator is a process of its own: it reads the readers in stride, answers its counts and latencies", async (t) => {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.url} ${req.headers.authorization}`);
    res.writeHead(req.url === "/bad" ? 500 : 200).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const { port } = server.address() as AddressInfo;
  const child = await spawnChild(new URL("../bench/read-load-child.ts", import.meta.url), {
    ready: /"ready"/,
    test: t,
  });
  const command: ReadLoadCommand = {
    cmd: "run",
    url: `http://127.0.0.1:${port}`,
    requests: ["/a", "/b", "/c", "/bad"].map((path) => ({ path, authorization: `Bearer ${path}` })),
    first: 1,
    stride: 2,
    ratePerS: 100,
    durationMs: 1_000,
    warmupMs: 200,
  };
  child.send(JSON.stringify(command));
  const result = JSON.parse(await child.nextLine()) as ReadLoadResult;
  await child.stop({ line: JSON.stringify({ cmd: "close" }) });
  // Requests 1, 3, 1, 3, …: "/b" and "/bad" in turn, each with its own key; "/bad" is an error.
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
