/**
 * A witness of host starvation that is not the code under test: how long the Redis server's
 * process waited for a CPU, from the kernel's own account (/proc/<pid>/schedstat, second field:
 * nanoseconds spent runnable on a run queue). On a 2-core machine running several test files,
 * Redis can wait there for hundreds of ms during one burst — it then answers nothing on any
 * connection, and a client's silence bound is right to expire. A test tells that apart from a
 * spurious timeout (its own event loop's lag) by reading this before and after.
 *
 * Undefined when Redis is not a process on this host's /proc (another machine, another pid
 * namespace): the caller then has no excuse to offer.
 *
 * @example
 * const runQueue = await redisRunQueue(url);
 * const before = runQueue?.waitedMs();
 * … // the burst
 * const starvedMs = runQueue ? runQueue.waitedMs() - before! : 0;
 */
import { readFileSync } from "node:fs";
import { Redis } from "ioredis";

export interface RunQueueWitness {
  readonly pid: number;
  /** Total ms the process has waited runnable for a CPU since it started. */
  waitedMs(): number;
}

export async function redisRunQueue(url: string): Promise<RunQueueWitness | undefined> {
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
  const read = () => Number(readFileSync(path, "utf8").split(" ")[1]) / 1e6;
  try {
    // The same pid in another namespace would be another process: it must be Redis's.
    if (!readFileSync(`/proc/${pid}/comm`, "utf8").startsWith("redis")) return undefined;
    if (!Number.isFinite(read())) return undefined;
  } catch {
    return undefined; // not on this host's /proc
  }
  return { pid, waitedMs: read };
}
