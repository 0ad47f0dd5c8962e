/**
 * CPU time a process tree has used, from /proc: a bench's "samples per CPU-second" counts
 * every process of a side (a server and its engine, a JVM-less Go binary, Node and DuckDB's
 * threads), not just the wall time. Each process's `utime + stime` (fields 14 and 15 of
 * /proc/<pid>/stat, in clock ticks), plus the root's `cutime + cstime` — the children it
 * has already reaped — so a worker that exits mid-run still counts. Linux only; elsewhere
 * (no /proc) the reading is undefined, and the bench says so instead of printing 0.
 *
 * @example
 * const before = treeCpuSeconds([service.pid, nats.pid]);
 * await load();
 * const used = treeCpuSeconds([service.pid, nats.pid])! - before!;   // CPU-seconds of both trees
 */
import { readdirSync, readFileSync } from "node:fs";
import { descendants } from "./process-tree.ts";

/** Linux's USER_HZ: /proc reports CPU time in 1/100 s on every architecture Node runs on. */
const TICKS_PER_S = 100;

/** [utime + stime, cutime + cstime] of one process in ticks, or undefined once it is gone. */
function ticksOf(pid: number): [number, number] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parens, so split after the LAST ")".
  // Fields after it start at field 3 (state): utime is field 14 → index 11.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const own = Number(fields[11]) + Number(fields[12]);
  const reaped = Number(fields[13]) + Number(fields[14]);
  return [own, reaped];
}

/**
 * CPU-seconds used so far by each root, its reaped children and its live descendants,
 * summed over `roots`. Undefined when a root is not readable (gone, or no /proc).
 */
export function treeCpuSeconds(roots: readonly number[]): number | undefined {
  let ticks = 0;
  for (const root of roots) {
    const top = ticksOf(root);
    if (top === undefined) return undefined;
    ticks += top[0] + top[1];
    for (const pid of descendants(root)) ticks += ticksOf(pid)?.[0] ?? 0;
  }
  return ticks / TICKS_PER_S;
}

/**
 * CPU-seconds of one process's threads so far, summed by thread name (`/proc/<pid>/task/<tid>/`:
 * Node's main thread carries the process's name, libuv's pool `libuv-worker`, V8's helpers
 * `V8 Worker`…): where a process's time goes. Undefined when it cannot be read.
 */
export function threadCpuSeconds(pid: number): Map<string, number> | undefined {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const byName = new Map<string, number>();
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "latin1");
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
    byName.set(name, (byName.get(name) ?? 0) + seconds);
  }
  return byName;
}

/** The whole machine's CPU time so far, in ticks summed over its cores (/proc/stat's "cpu" line). */
export interface MachineTicks {
  /** user + nice + system + irq + softirq: time some process or the kernel ran. */
  readonly busy: number;
  /** busy + idle + iowait + steal. */
  readonly total: number;
}

/** Undefined without /proc. */
export function machineTicks(): MachineTicks | undefined {
  let line: string;
  try {
    line = readFileSync("/proc/stat", "latin1").split("\n", 1)[0]!;
  } catch {
    return undefined;
  }
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice" (guest time is inside user).
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number);
  const busy = user! + nice! + system! + irq! + softirq!;
  return { busy, total: busy + idle! + iowait! + (steal ?? 0) };
}

/**
 * How busy the machine was between two readings, 0..1 of all its cores (2 cores, one of them
 * full: 0.5): the headroom a latency figure was measured with. Undefined when a reading is
 * missing or no tick passed.
 */
export function machineBusyShare(
  before: MachineTicks | undefined,
  after: MachineTicks | undefined,
): number | undefined {
  if (before === undefined || after === undefined || after.total <= before.total) return undefined;
  return (after.busy - before.busy) / (after.total - before.total);
}
