/**
 * A witness of host starvation that is not the code under test: how long the Redis server's
 * process waited for a CPU, from the kernel's own account (/proc/<pid>/schedstat, second field:
 * nanoseconds spent runnable on a run queue). On a 2-core machine running several test files,
 * Redis can wait there for hundreds of ms during one burst — it then answers nothing on any
 * connection, and a client's silence bound is right to expire. A test tells that apart from a
 * spurious timeout (its own event loop's lag) by counting across the burst.
 *
 * When Redis is not a process on this host's /proc (another machine, another pid namespace),
 * every count is 0: the caller then has no excuse to offer.
 *
 * @example
 * const redisCpu = await redisRunQueue(url);
 * const waited = redisCpu.mark();
 * … // the burst
 * if (waited() >= timeoutMs) … // Redis itself was kept off the CPU that long
 */
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";

export interface RunQueueWitness {
  /** Starts a count: the function returned gives the ms Redis has waited for a CPU since. */
  mark(): () => number;
}

const NO_WITNESS: RunQueueWitness = { mark: () => () => 0 };

export async function redisRunQueue(url: string): Promise<RunQueueWitness> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  let pid: number;
  try {
    await client.connect();
    const info = await client.info("server");
    pid = Number(/^process_id:(\d+)/m.exec(info)?.[1]);
  } finally {
    client.disconnect();
  }
  const path = `/proc/${pid}/schedstat`;
  const waitedMs = () => Number(readFileSync(path, "utf8").split(" ")[1]) / 1e6;
  try {
    // The same pid in another namespace would be another process: it must be Redis's.
    if (!readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("redis")) return NO_WITNESS;
    if (!Number.isFinite(waitedMs())) return NO_WITNESS;
  } catch {
    return NO_WITNESS; // not on this host's /proc
  }
  return {
    mark() {
      const before = waitedMs();
      return () => waitedMs() - before;
    },
  };
}
