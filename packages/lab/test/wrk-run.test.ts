/**
 * Reading Debian wrk's summary: the rate, p50/p99 from `--latency`, and every error it counts
 * (non-2xx/3xx answers plus socket errors); a summary without a rate is refused by name. And the
 * cycling script: every request in turn, with its headers.
 */
import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { parseWrk, writeCyclingScript } from "../src/wrk-run.ts";

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
