/**
 * A dashboard stampede, as its own process (so the load never shares an event loop with the
 * test that measures the alert): `concurrency` loops each sending heavy range queries to the
 * metrics query API back to back, bounded by `durationMs` or a `stop` line on stdin. Prints
 * `saturated` once every loop has had an answer, then on stop one JSON line: queries answered,
 * failures, and latency p50 / max in ms.
 *
 * @example
 * // node test/query-load-child.ts <url> <apiKey> <concurrency> <durationMs> <startS> <endS>
 * const load = await spawnChild(new URL("./query-load-child.ts", import.meta.url), { args, ready: "saturated", test: t });
 */
import { createInterface } from "node:readline";

const [url, apiKey, concurrencyText, durationText, startS, endS] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const deadline = Date.now() + Number(durationText);
const QUERIES = [
  "sum by (mod) (rate(sat_requests_total[5m]))",
  "max_over_time(sat_requests_total[10m])",
  "avg(increase(sat_requests_total[15m]))",
];
let stopped = false;
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "stop") stopped = true;
});

const latencies: number[] = [];
let failures = 0;
const answered = new Set<number>();
let said = false;

async function loop(id: number): Promise<void> {
  for (let i = id; !stopped && Date.now() < deadline; i++) {
    const query = QUERIES[i % QUERIES.length]!;
    const started = performance.now();
    try {
      const res = await fetch(
        `${url}/api/v1/query_range?${new URLSearchParams({ query, start: startS!, end: endS!, step: "15" })}`,
        { headers: { authorization: `Bearer ${apiKey}` }, signal: AbortSignal.timeout(120_000) },
      );
      await res.arrayBuffer();
      if (res.status === 200) latencies.push(performance.now() - started);
      else failures++;
    } catch {
      failures++;
    }
    answered.add(id);
    if (!said && answered.size === concurrency) {
      said = true;
      process.stdout.write("saturated\n");
    }
  }
}

await Promise.all(Array.from({ length: concurrency }, (_, id) => loop(id)));
latencies.sort((a, b) => a - b);
process.stdout.write(
  `${JSON.stringify({
    queries: latencies.length,
    failures,
    p50Ms: Math.round(latencies[latencies.length >> 1] ?? 0),
    maxMs: Math.round(latencies.at(-1) ?? 0),
  })}\n`,
);
process.exit(0);
