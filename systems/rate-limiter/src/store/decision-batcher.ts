/**
 * Script-level batching: single-key decisions of concurrent requests, issued in the
 * same turn of the event loop, go to Redis as ONE call of their algorithm's script in
 * "each" mode — one EVALSHA, one TIME, many independent decisions, in arrival order
 * (a key that appears twice sees its first occurrence's write). Redis runs one script
 * for N decisions instead of N, and Node encodes one command instead of N: this is what
 * lets one Redis serve more decisions per second than a call per decision can.
 *
 * Only for a standalone Redis: the keys of one batch may lie in any slot (in a cluster
 * each slot's node must get its own call, and batches there would rarely fill).
 *
 * @example
 * const batcher = new DecisionBatcher((name, keys, args) => runner.run(name, keys, args), { maxKeys: 64 });
 * const outcome = await batcher.spend(group); // group.keys.length === 1
 */
import { type AlgorithmName, type Limit, limitBounds } from "../domain/algorithm.ts";
import { algorithms } from "../domain/algorithms.ts";
import type { GroupCall, GroupOutcome } from "../domain/store-port.ts";

export type RunScript = (name: string, keys: string[], args: string[]) => Promise<unknown>;

interface Waiter {
  resolve(outcome: GroupOutcome): void;
  reject(error: unknown): void;
}

interface Pending {
  readonly keys: string[];
  readonly args: string[];
  readonly waiters: Waiter[];
}

/** Upper bound on `maxKeys`: the scripts' own bound on calls per "each" run. */
const MAX_BATCH_KEYS = limitBounds.maxCallsPerEach;

/** Values per key in an "each" reply: allowed, remaining, resetMs, retryAfterMs, delayMs. */
const EACH_STRIDE = 5;

export class DecisionBatcher {
  readonly #run: RunScript;
  readonly #maxKeys: number;
  readonly #pending = new Map<AlgorithmName, Pending>();
  #scheduled = false;

  /** `maxKeys`: bound on decisions per script call (keeps each script run short: Redis is single-threaded). */
  constructor(run: RunScript, options: { maxKeys: number }) {
    if (!(Number.isInteger(options.maxKeys) && options.maxKeys >= 1 && options.maxKeys <= MAX_BATCH_KEYS)) {
      throw new RangeError(`maxKeys must be an integer in [1, ${MAX_BATCH_KEYS}], got ${options.maxKeys}`);
    }
    this.#run = run;
    this.#maxKeys = options.maxKeys;
  }

  /** Decides one single-key group, batched with the others of this turn. */
  spend(group: GroupCall): Promise<GroupOutcome> {
    if (group.keys.length !== 1) throw new RangeError("DecisionBatcher takes single-key groups only");
    const algorithm = algorithms[group.algorithm] as {
      scriptArgs(l: Limit, c: number, id?: string): string[];
    };
    let pending = this.#pending.get(group.algorithm);
    if (!pending) {
      pending = { keys: [], args: ["each"], waiters: [] };
      this.#pending.set(group.algorithm, pending);
    }
    pending.keys.push(group.keys[0]!);
    pending.args.push(...algorithm.scriptArgs(group.limits[0]!, group.costs[0]!, group.requestId));
    const outcome = new Promise<GroupOutcome>((resolve, reject) => pending.waiters.push({ resolve, reject }));
    if (pending.keys.length >= this.#maxKeys) this.#flush(group.algorithm);
    else this.#schedule();
    return outcome;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    // setImmediate, not a microtask: requests read from many sockets in one poll phase join one batch.
    setImmediate(() => {
      this.#scheduled = false;
      for (const algorithm of [...this.#pending.keys()]) this.#flush(algorithm);
    });
  }

  #flush(algorithm: AlgorithmName): void {
    const batch = this.#pending.get(algorithm);
    if (!batch) return;
    this.#pending.delete(algorithm);
    this.#run(algorithm, batch.keys, batch.args).then(
      (reply) => settle(batch.waiters, reply),
      (error) => {
        for (const waiter of batch.waiters) waiter.reject(error);
      },
    );
  }
}

function settle(waiters: readonly Waiter[], reply: unknown): void {
  const values = (reply as unknown[]).map(Number);
  const nowMs = values[1]!;
  waiters.forEach((waiter, i) => {
    const at = 4 + i * EACH_STRIDE;
    const allowed = values[at] === 1;
    waiter.resolve({
      allowed,
      nowMs,
      retryAfterMs: values[at + 3]!,
      delayMs: values[at + 4]!,
      keys: [{ allowed, remaining: values[at + 1]!, resetMs: values[at + 2]! }],
    });
  });
}
