/**
 * The memory matrix of `casebook bench cache` (issue 15): for each key count × value size, a
 * fresh cache node and a fresh redis-server (bench-targets.ts `openMemoryPair`), filled the
 * same way in three phases, INFO memory read after each:
 *
 * - writes: SET `key:%012d` to a value of the cell's size, every key once;
 * - overwrites: every key again, another value of the same size;
 * - deletes: DEL three keys of every four (what stays allocated shows fragmentation).
 *
 * Per key figures are (phase − idle) / keys written, for both sides: RSS, used_memory, and for
 * our node V8's heap used / heap total and external memory (ArrayBuffers: the value arena).
 * Memory figures are meaningful on a loaded machine; the load average is printed beside them.
 *
 * @example
 * const matrix = await runMemoryMatrix({ keyCounts: [100_000], valueSizes: [100], log });
 * matrix.rows; matrix.goals;
 */
import { loadavg } from "node:os";
import type { BenchResult } from "@casebook/lab/bench-report";
import { goalLine, scenarioRows } from "@casebook/lab/bench-rows";
import { Redis } from "ioredis";
import { openMemoryPair, readInfoMemory } from "./bench-targets.ts";

/** Commands per pipeline: bounds the client's buffered replies. */
const CHUNK = 1_000;
/** Pause after a phase before reading memory, so a GC the phase triggered can finish. */
const SETTLE_MS = 1_000;
const PHASES = ["writes", "overwrites", "deletes"] as const;
type Phase = (typeof PHASES)[number];

interface Snapshot {
  readonly rss: number;
  readonly used: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly keys: number;
}

async function snapshot(port: number): Promise<Snapshot> {
  const { field, keys } = await readInfoMemory(port);
  return {
    rss: field("used_memory_rss"),
    used: field("used_memory"),
    heapUsed: field("node_heap_used"),
    heapTotal: field("node_heap_total"),
    external: field("node_external"),
    keys,
  };
}

const keyName = (i: number) => `key:${String(i).padStart(12, "0")}`;

/** Runs one phase on a server through pipelines of CHUNK commands. */
async function runPhase(port: number, phase: Phase, keys: number, valueBytes: number): Promise<void> {
  const client = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, commandTimeout: 60_000 });
  const value = (phase === "writes" ? "a" : "b").repeat(valueBytes);
  try {
    await client.connect();
    for (let start = 0; start < keys; start += CHUNK) {
      const pipeline = client.pipeline();
      for (let i = start; i < Math.min(keys, start + CHUNK); i++) {
        if (phase !== "deletes") pipeline.set(keyName(i), value);
        else if (i % 4 !== 0) pipeline.del(keyName(i));
      }
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error !== null);
      if (failed) throw failed[0];
    }
  } finally {
    client.disconnect();
  }
}

export interface MemoryMatrixOptions {
  readonly keyCounts: readonly number[];
  readonly valueSizes: readonly number[];
  readonly log: (line: string) => void;
}

export interface MemoryMatrix {
  readonly rows: BenchResult[];
  readonly goals: string[];
  readonly preamble: string;
}

const perKey = (after: number, before: number, keys: number) => (after - before) / keys;

function cellRows(
  keys: number,
  valueBytes: number,
  idle: { ours: Snapshot; redis: Snapshot },
  phases: ReadonlyMap<Phase, { ours: Snapshot; redis: Snapshot }>,
): BenchResult[] {
  const rows = scenarioRows({
    system: "cache",
    scenario: `memory ${keys} keys × ${valueBytes} B`,
    peer: "redis",
  });
  const out = [rows.value("RSS idle", "MiB", idle.ours.rss / 2 ** 20, { peer: idle.redis.rss / 2 ** 20 })];
  for (const [phase, at] of phases) {
    const ours = (field: keyof Snapshot) => perKey(at.ours[field], idle.ours[field], keys);
    const redis = (field: keyof Snapshot) => perKey(at.redis[field], idle.redis[field], keys);
    out.push(
      rows.value(`${phase}: RSS growth per key`, "B", ours("rss"), { peer: redis("rss") }),
      rows.value(`${phase}: used_memory per key`, "B", ours("used"), { peer: redis("used") }),
      rows.value(`${phase}: V8 heap used per key`, "B", ours("heapUsed")),
      rows.value(`${phase}: V8 heap total per key`, "B", ours("heapTotal")),
      rows.value(`${phase}: external per key`, "B", ours("external")),
    );
  }
  return out;
}

/** One cell: fresh servers, idle snapshot, the three phases on both servers at once, snapshots. */
async function runCell(keys: number, valueBytes: number, log: (line: string) => void) {
  const pair = await openMemoryPair();
  try {
    const idle = { ours: await snapshot(pair.ours), redis: await snapshot(pair.redis) };
    const phases = new Map<Phase, { ours: Snapshot; redis: Snapshot }>();
    for (const phase of PHASES) {
      log(`memory ${keys} keys × ${valueBytes} B: ${phase}`);
      await Promise.all([
        runPhase(pair.ours, phase, keys, valueBytes),
        runPhase(pair.redis, phase, keys, valueBytes),
      ]);
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
      phases.set(phase, { ours: await snapshot(pair.ours), redis: await snapshot(pair.redis) });
    }
    return { idle, phases };
  } finally {
    await pair.close();
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

export async function runMemoryMatrix(options: MemoryMatrixOptions): Promise<MemoryMatrix> {
  const startedMs = Date.now();
  const loadBefore = load();
  const rows: BenchResult[] = [];
  const goals: string[] = [];
  for (const keys of options.keyCounts.filter((n) => n > 0)) {
    for (const valueBytes of options.valueSizes) {
      const { idle, phases } = await runCell(keys, valueBytes, options.log);
      rows.push(...cellRows(keys, valueBytes, idle, phases));
      if (valueBytes !== 100) continue;
      const writes = phases.get("writes")!;
      const rss =
        perKey(writes.ours.rss, idle.ours.rss, keys) / perKey(writes.redis.rss, idle.redis.rss, keys);
      const used =
        perKey(writes.ours.used, idle.ours.used, keys) / perKey(writes.redis.used, idle.redis.used, keys);
      goals.push(
        goalLine(
          `goal RSS growth per key ≤ 2× redis-server, ${keys} keys × 100 B`,
          `${rss.toFixed(2)}×`,
          rss <= 2,
        ),
        goalLine(
          `goal used_memory per key ≤ 1.2× redis-server, ${keys} keys × 100 B`,
          `${used.toFixed(2)}×`,
          used <= 1.2,
        ),
      );
    }
  }
  const seconds = ((Date.now() - startedMs) / 1000).toFixed(0);
  const preamble = `memory matrix: fresh servers per cell, both filled at once through ioredis pipelines of ${CHUNK}; per key = (phase − idle) / keys written; took ${seconds} s; load average ${loadBefore} before, ${load()} after`;
  return { rows, goals, preamble };
}
