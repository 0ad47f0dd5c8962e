/**
 * Scenario "open": decisions arrive at a fixed rate (20,000/s by default) whatever
 * the limiter does, like independent users; each latency counts from the intended
 * send time, so a stall shows in p99 instead of slowing the sender (coordinated
 * omission). Ours on the peer's algorithm and limit (fixed window, 10 per 2 s: equal work),
 * as shipped and unbatched, beside rate-limiter-flexible; our token bucket on its own.
 *
 * @example
 * const rows = await runOpenScenario(target, { ratePerS: 20_000, durationMs: 5_000, warmupMs: 1_000,
 *   users: 10_000, log });
 */
import type { BenchResult } from "@casebook/lab/bench-report";
import { allowedRow, contenderRows } from "./bench-rows.ts";
import { benchFixedWindow, type Contender, openOursLimiter, openPeer } from "./contenders.ts";
import { type Measured, type MeasureOptions, measureOpen } from "./measure.ts";
import type { RedisTarget } from "./redis-target.ts";

export interface OpenOptions extends Omit<MeasureOptions, "redis"> {
  readonly ratePerS: number;
}

function noopContender(): Contender {
  return {
    name: "harness: no-op",
    decide: () => new Promise<boolean>((resolve) => setImmediate(() => resolve(true))),
    keyOf: (user) => user,
    close: async () => {},
  };
}

async function run(
  open: () => Promise<Contender>,
  target: RedisTarget,
  options: OpenOptions,
): Promise<Measured> {
  const contender = await open();
  try {
    return await measureOpen(contender, { ...options, redis: target });
  } finally {
    await contender.close();
  }
}

/**
 * Runs ours and the peer at the same arrival rate and returns the rows.
 *
 * @example
 * renderBench(await runOpenScenario(target, options), "json");
 */
export async function runOpenScenario(target: RedisTarget, options: OpenOptions): Promise<BenchResult[]> {
  const label = `open ${options.ratePerS}/s, ${options.users} users`;
  const ours = await run(
    () => openOursLimiter(target, { domain: "open-fw", limit: benchFixedWindow }),
    target,
    options,
  );
  const peer = await run(() => openPeer(target, benchFixedWindow), target, options);
  // The what-if of the closed scenario: the same path with one script call per decision.
  const noPipe = await run(
    () => openOursLimiter(target, { domain: "open-nopipe", batching: false, limit: benchFixedWindow }),
    target,
    options,
  );
  const bucket = await run(() => openOursLimiter(target, { domain: "open-tb" }), target, options);
  // The harness's own floor: a decision that only yields one event-loop turn. Its p99 is
  // what the load generator, in the same process on this machine, costs by itself.
  const harness = await run(async () => noopContender(), target, options);
  return [
    ...contenderRows(`${label}: fixed window 10 per 2 s, Limiter.check`, ours, peer),
    allowedRow(`${label}: fixed window 10 per 2 s, Limiter.check`, `allowed share, ${peer.contender}`, peer),
    ...contenderRows(`${label}: fixed window, Limiter.check, unbatched`, noPipe, peer),
    ...contenderRows(`${label}: token bucket 10 @ 5/s, Limiter.check`, bucket),
    ...contenderRows(`${label}: harness floor (no-op decision)`, harness).filter((row) =>
      row.metric.startsWith("latency"),
    ),
  ];
}
