/**
 * The acquirer simulator in its own PROCESS, stamping the arrival of every authorization request
 * (`/v1/authorizations…`) on its own server: PY-12's rate is measured where the acquirer sees it,
 * on an event loop the payments service under test cannot stall (in one process, a PGlite query
 * delays the server's reads and bunches the stamps).
 *
 * stdout, one JSON line each: `{"url"}` once listening; `{"arrivals":[{atMs,method,url}…],
 * "longestStallMs"}` after the `arrivals` command — with the longest its event loop stood still
 * since it started (a stall stamps the requests that queued meanwhile together). stdin:
 * `arrivals`, `stop`. Faults through its HTTP admin routes.
 *
 * @example
 * // node systems/payments/test/recording-acquirer-child.ts   stdout: {"url":"http://127.0.0.1:41234"}
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { createAcquirerSim } from "../src/sim/acquirer-sim.ts";

/** Bound on the arrivals kept: a test sends far fewer. */
const MAX_ARRIVALS = 100_000;

const sim = createAcquirerSim({
  clock: systemClock,
  rng: seededRandom("recording-acquirer"),
  log: { level: "silent" },
  defaultMetrics: false,
});
const arrivals: { atMs: number; method: string; url: string }[] = [];
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
sim.service.app.addHook("onRequest", async (request) => {
  if (request.url.startsWith("/v1/authorizations") && arrivals.length < MAX_ARRIVALS) {
    arrivals.push({ atMs: performance.now(), method: request.method, url: request.url });
  }
});
const { url } = await sim.listen({ port: 0, host: "127.0.0.1" });
const say = (line: object) => process.stdout.write(`${JSON.stringify(line)}\n`);
say({ url });

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const command = line.trim();
  if (command === "stop") break;
  if (command === "arrivals") say({ arrivals, longestStallMs: loopDelay.max / 1e6 });
  else say({ error: `unknown command: ${line}` });
}
lines.close();
await sim.close();
