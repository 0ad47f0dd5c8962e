/**
 * The bench's parts that can break without running it (a run needs wrk, nginx and minutes):
 * its flags, and the reading of wrk's summary.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { benchHelp, parseBenchArgs } from "../bench/main.ts";
import { parseWrk } from "../bench/wrk-run.ts";

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

test("the bench reads wrk's summary (rate, p50/p99, errors) and refuses bad flags", () => {
  assert.deepEqual(parseWrk(WRK_OUTPUT), { requestsPerS: 32642.17, p50Ms: 1.43, p99Ms: 2.98, errors: 7 });
  assert.throws(() => parseWrk("wrk: connection refused"), /no Requests\/sec/);
  assert.equal(parseBenchArgs([]).links, 1_000_000);
  assert.equal(parseBenchArgs(["--duration-s", "2"]).durationS, 2);
  assert.throws(() => parseBenchArgs(["--duration-s", "0"]), /duration/);
  assert.match(benchHelp, /zipf/);
});
