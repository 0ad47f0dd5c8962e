/**
 * The console's rate-limiter scenario (RL-07 shown live): the same burst at a window boundary
 * under each algorithm, every one configured for "100 per minute" (`limitsPerMinute`): 100
 * requests spread over the last second before a minute boundary and 100 over the first second
 * after it. Each algorithm's own `decide` runs on a simulated clock — the mechanism the store's
 * scripts implement, with explicit times, so the run needs no minute of waiting and touches no
 * live key. A point per request: its time from the boundary (s) and the units let through so far,
 * one line per algorithm; the result sentence names how many each let through.
 *
 * @example
 * new ScenarioRuns([boundaryBurstScenario()]);
 */
import type { Scenario } from "@casebook/infra/http/scenario-runs";
import { type AlgorithmName, algorithmNames, type Decision, type Limit } from "../domain/algorithm.ts";
import { limitsPerMinute } from "../domain/algorithm-comparison.ts";
import { algorithms } from "../domain/algorithms.ts";

/** A minute boundary of a real date, so stored timestamps look as in production. */
const BOUNDARY_MS = 1_792_627_260_000;

export function boundaryBurstScenario(options: { limitPerMin?: number } = {}): Scenario {
  const limit = options.limitPerMin ?? 100;
  return {
    id: "boundary-burst",
    title: "The same burst at a window boundary, under each algorithm",
    line: `${limit} requests in the second before a minute boundary and ${limit} in the second after, limit ${limit}/min: what each algorithm lets through.`,
    xLabel: "s from the minute boundary",
    yLabel: "requests let through",
    run: async (ctx) => {
      const limits = limitsPerMinute(limit);
      const through = new Map<AlgorithmName, number>();
      for (const [i, name] of algorithmNames.entries()) {
        ctx.signal.throwIfAborted();
        const algorithm = algorithms[name] as unknown as {
          decide(state: unknown, nowMs: number, limit: Limit, cost: number, id?: string): Decision<unknown>;
        };
        let state: unknown;
        let admitted = 0;
        for (let r = 0; r < 2 * limit; r++) {
          // Evenly over [−1 s, 0) then [0, 1 s): the boundary falls between request limit−1 and limit.
          const offsetMs = r < limit ? -1_000 + (r * 1_000) / limit : ((r - limit) * 1_000) / limit;
          const decision = algorithm.decide(state, BOUNDARY_MS + offsetMs, limits[name], 1, `req-${r}`);
          if (decision.allowed) {
            state = decision.state;
            admitted += 1;
          }
          ctx.point(name, offsetMs / 1_000, admitted);
        }
        through.set(name, admitted);
        ctx.progress((i + 1) / algorithmNames.length);
        // A breath between algorithms: the page sees the lines arrive one by one.
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      const parts = algorithmNames.map((n) => `${n} ${through.get(n)}`).join(", ");
      return `${2 * limit} requests across a minute boundary, limit ${limit}/min — let through: ${parts} (fixed window lets ${through.get("fixed-window")} = ${(through.get("fixed-window") ?? 0) / limit}× the limit).`;
    },
  };
}
