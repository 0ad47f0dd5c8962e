/**
 * The console's eviction scenario (CA-24 shown live): the same zipf trace through two PRIVATE
 * keyspaces — the node's own `Keyspace`, built for the run and never the node's live one — of the
 * same maxmemory, one under `allkeys-lru` (Redis's sampled LRU with its pool), one under this
 * node's `allkeys-w-tinylfu`. Each request is a cache-aside step (GET; on a miss, SET), so the
 * keyspaces' own hit counters are the result. A point per chunk of the trace: the hit ratio so far
 * of each, in %; the sentence gives both final ratios and the difference.
 *
 * The trace is seeded (the same figures every run) and the keyspaces read a simulated clock that
 * advances 1 ms a request, so LRU's millisecond access stamps order every request.
 *
 * @example
 * new ScenarioRuns([lruVsTinyLfuScenario()]);
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import { ManualClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { entryBytes, NO_EXPIRY } from "../domain/cache-entry.ts";
import type { EvictionPolicyName } from "../domain/eviction-policy.ts";
import { Keyspace } from "../domain/keyspace.ts";
import { zipfTrace } from "../domain/zipf-trace.ts";

export interface LruVsTinyLfuOptions {
  /** Distinct keys of the trace. Default 20 000. */
  keys?: number;
  /** Requests of the trace. Default 200 000. */
  requests?: number;
  /** Zipf exponent. Default 0.99 (web and cache traffic). */
  exponent?: number;
  /** Keys each keyspace holds at maxmemory. Default 1 000 (5% of the keys). */
  capacity?: number;
  /** Points per policy. Default 40. */
  chunks?: number;
  /** Pause between chunks, so the lines grow on the page. Default 100. */
  pauseMs?: number;
}

const POLICIES: readonly EvictionPolicyName[] = ["allkeys-lru", "allkeys-w-tinylfu"];
const VALUE = "v".repeat(64);
/** Fixed-width names: every entry costs the same bytes, so maxmemory is a key count. */
const keyName = (id: number) => `zipf:${String(id).padStart(8, "0")}`;

export function lruVsTinyLfuScenario(options: LruVsTinyLfuOptions = {}): Scenario {
  const keys = options.keys ?? 20_000;
  const requests = options.requests ?? 200_000;
  const exponent = options.exponent ?? 0.99;
  const capacity = options.capacity ?? 1_000;
  const chunks = options.chunks ?? 40;
  const pauseMs = options.pauseMs ?? 100;
  const share = `${((capacity / keys) * 100).toFixed(0)}%`;
  return {
    id: "lru-vs-tinylfu",
    title: "LRU vs W-TinyLFU on a zipf trace",
    line: `The same zipf trace (s ${exponent}, ${requests.toLocaleString("en")} requests over ${keys.toLocaleString("en")} keys) through two private keyspaces holding ${capacity.toLocaleString("en")} keys (${share}): allkeys-lru and allkeys-w-tinylfu, hit ratio as it advances.`,
    xLabel: "requests replayed (thousands)",
    yLabel: "hit ratio so far (%)",
    run: async (ctx) => {
      const trace = zipfTrace({ keys, requests, exponent, random: seededRandom("console:lru-vs-tinylfu") });
      const maxmemoryBytes = capacity * entryBytes(keyName(0), VALUE);
      const runs = POLICIES.map((policy, i) => {
        const clock = new ManualClock(1_700_000_000_000);
        const keyspace = new Keyspace({
          clock,
          random: seededRandom(`console:${i}`),
          maxmemoryBytes,
          policy,
        });
        return { policy, clock, keyspace };
      });
      const step = Math.ceil(requests / chunks);
      for (let from = 0; from < requests; from += step) {
        ctx.signal.throwIfAborted();
        const to = Math.min(requests, from + step);
        for (const { clock, keyspace } of runs) {
          for (let i = from; i < to; i++) {
            const key = keyName(trace[i]!);
            if (keyspace.get(key) === undefined) keyspace.set(key, VALUE, NO_EXPIRY);
            clock.advance(1);
          }
        }
        for (const { policy, keyspace } of runs)
          ctx.point(policy, to / 1_000, percent(keyspace.stats.hits, to));
        ctx.progress(to / requests);
        await sleep(pauseMs, undefined, { signal: ctx.signal });
      }
      const [lru, tiny] = runs.map((r) => percent(r.keyspace.stats.hits, requests)) as [number, number];
      const held = runs.map((r) => r.keyspace.size).join(" and ");
      const diff = tiny - lru;
      return (
        `The same zipf trace (s ${exponent}, ${requests.toLocaleString("en")} requests over ${keys.toLocaleString("en")} keys), ` +
        `each keyspace holding ${capacity.toLocaleString("en")} keys (${held} at the end): allkeys-lru hit ${lru.toFixed(1)}%, ` +
        `allkeys-w-tinylfu ${tiny.toFixed(1)}% — ${Math.abs(diff).toFixed(1)} points ${diff >= 0 ? "more" : "fewer"} hits with W-TinyLFU's admission.`
      );
    },
  };
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((part / whole) * 1_000) / 10;
}
