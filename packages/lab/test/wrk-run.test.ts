/**
 * Reading Debian wrk's summary: the rate, p50/p99 from `--latency`, and every error it counts
 * (non-2xx/3xx answers plus socket errors); a summary without a rate is refused by name. And the
 * cycling script: every request in turn, with its headers.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { spawnOrSkip } from "../src/server-engine.ts";
import { parseWrk, runWrk, writeCyclingScript } from "../src/wrk-run.ts";

const WRK_OUTPUT = `Running 5s test @ http://127.0.0.1:8190/x
  2 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.52ms  402.11us  12.30ms   90.12%
    Req/Sec    16.40k     1.02k   18.11k    71.00%
  Latency Distribution
     50%    1.43ms
     75%    1.61ms
     90%    1.90ms
     99%    2.98ms
  163215 requests in 5.00s, 18.21MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 4
Requests/sec:  32642.17
Transfer/sec:      3.64MB
`;

test("wrk's summary: rate, p50/p99 in ms, errors summed; no rate is an error", () => {
  assert.deepEqual(parseWrk(WRK_OUTPUT), { requestsPerS: 32642.17, p50Ms: 1.43, p99Ms: 2.98, errors: 7 });
  assert.throws(() => parseWrk("wrk: connection refused"), /no Requests\/sec/);
});

test("a cycling script sends every request in turn with its headers; a tab in a field is refused", async () => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-wrk-"));
  try {
    const script = await writeCyclingScript(dir, [
      { path: "/a", headers: { authorization: "Bearer k1" } },
      { path: "/b?x=1" },
    ]);
    const lua = await readFile(script, "utf8");
    assert.match(lua, /wrk\.format\("GET", fields\[1\], headers\)/);
    const data = await readFile(join(dir, "wrk-requests.tsv"), "utf8");
    assert.equal(data, "/a\tauthorization\tBearer k1\n/b?x=1\n");
    await assert.rejects(writeCyclingScript(dir, [{ path: "/a\tb" }]), /tab or newline/);
    await assert.rejects(writeCyclingScript(dir, []), /at least one/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a cycling script run by wrk: every request well formed (Host included), each path with its own headers", async (t) => {
  const seen = new Map<string, Set<string>>();
  const server = createServer((req, res) => {
    const auths = seen.get(req.url ?? "") ?? new Set<string>();
    auths.add(String(req.headers.authorization));
    seen.set(req.url ?? "", auths);
    res.writeHead(200).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const dir = await mkdtemp(join(tmpdir(), "casebook-wrk-"));
  t.after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });
  const script = await writeCyclingScript(dir, [
    { path: "/a", headers: { authorization: "Bearer k1" } },
    { path: "/b", headers: { authorization: "Bearer k2" } },
  ]);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const run = await spawnOrSkip(t, () => runWrk({ url, durationS: 1, connections: 2, threads: 1, script }));
  if (!run) return;
  assert.equal(run.errors, 0, "Node refuses a request without Host: every one was answered 200");
  assert.deepEqual([...(seen.get("/a") ?? [])], ["Bearer k1"]);
  assert.deepEqual([...(seen.get("/b") ?? [])], ["Bearer k2"]);
});
