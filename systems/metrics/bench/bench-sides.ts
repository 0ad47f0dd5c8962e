/**
 * The sides of `casebook bench metrics`, each a running server the bench writes to with
 * remote-write and queries with Prometheus's HTTP API, with what its CPU is counted on and how
 * its bytes on disk are read:
 *
 * - **metrics** (ours): `src/main.ts` as its own process — ingest, the stream's three consumers
 *   (hot writer, rollup builder with DuckDB's threads, alert evaluator), PGlite for the tenant —
 *   plus a private nats-server (JetStream, file storage), the stream engine. CPU: both process
 *   trees. Disk: after the run the service is stopped and its TSDB opened here to compact the
 *   head into a block (what it does itself once the head spans 1.5 block ranges); bytes are the
 *   blocks' `chunks` + `index` files, no WAL.
 * - **stream-floor** (bench/stream-floor.ts, ingest only): each body published as it arrived to a
 *   nats-server of its own and read by three consumers that do nothing — the stream hop alone, a
 *   ceiling for designs on this stream (`--floor-decode`: with the bodies decoded at the ingest,
 *   or there and in every consumer). CPU: its process and its nats-server.
 * - **prometheus** (Debian's 2.42, `--web.enable-remote-write-receiver`): CPU of its process.
 *   Disk: a snapshot with the head (`POST /api/v1/admin/tsdb/snapshot`), which writes the head
 *   as a block beside hard links to the blocks it compacted itself: every block's `chunks/` and
 *   `index`, no WAL. Chosen over `promtool tsdb create-blocks-from openmetrics` because it keeps
 *   the same ingest path (the samples Prometheus received), as the other two sides do.
 * - **victoria-metrics** (Debian's 1.79.5): CPU of its process. Disk: `data/` + `indexdb/` after
 *   `/internal/force_flush` and `/internal/force_merge` and the merge going quiet.
 *
 * @example
 * const ours = await startOurs({ tmpDir, natsMaxBytes });
 * ours.cpuSeconds();          // CPU-seconds of the service and nats-server so far
 * await ours.close();
 * const disk = await ours.storage();  // after close: { bytes, samples, how }
 */
import { randomBytes } from "node:crypto";
import type { Dirent } from "node:fs";
import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { benchLog } from "@casebook/lab/bench-main";
import { threadCpuSeconds, treeCpuSeconds } from "@casebook/lab/process-cpu";
import { startServerProcess } from "@casebook/lab/server-process";
import { spawnNats } from "@casebook/lab/spawn-nats";
import { spawnPrometheus } from "@casebook/lab/spawn-prometheus";
import { spawnVictoriaMetrics } from "@casebook/lab/spawn-victoria-metrics";
import { Tsdb } from "../src/store/tsdb.ts";

export type SideName = "metrics" | "stream-floor" | "prometheus" | "victoria-metrics";

export interface StorageReading {
  readonly bytes: number;
  /** Samples the side says it holds on disk (its blocks' meta), when it says. */
  readonly samples: number | undefined;
  readonly how: string;
}

export interface BenchSide {
  readonly name: SideName;
  /** Which processes the CPU reading counts. */
  readonly counted: string;
  /** Takes part in the ingest only: it answers no query and keeps nothing on disk (the floor). */
  readonly ingestOnly?: boolean;
  readonly writeUrl: string;
  readonly writeHeaders: Record<string, string>;
  readonly queryUrl: string;
  readonly queryHeaders: Record<string, string>;
  /** Extra query parameters (VictoriaMetrics: its result cache off). */
  readonly queryParams: Record<string, string>;
  /** CPU-seconds of every counted process so far; undefined when /proc cannot say. */
  cpuSeconds(): number | undefined;
  /** The same CPU-seconds by process (and a Node process by thread name), where the side has several. */
  cpuParts?(): Map<string, number>;
  /** Resolves once every acknowledged sample is stored and visible to queries. */
  stored(samples: number): Promise<void>;
  /** Compacts as the side does and reads its bytes on disk; ours needs `close` first. */
  storage(): Promise<StorageReading>;
  close(): Promise<void>;
}

const REMOTE_WRITE_HEADERS = {
  "content-type": "application/x-protobuf",
  "content-encoding": "snappy",
  "x-prometheus-remote-write-version": "0.1.0",
};
/** Our TSDB's block range (the service's default, METRICS_BLOCK_RANGE_MS). */
const BLOCK_RANGE_MS = 7_200_000;
/** A side whose stored count has not moved for this long has stored all it will. */
const STALL_MS = 15_000;
/** Each poll of a side's /metrics costs it CPU that the reading counts: once a second. */
const POLL_MS = 1_000;

/** Sum of the sizes of the files under `dir` whose path (relative) `keep` accepts. */
export async function filesBytes(dir: string, keep: (path: string) => boolean, prefix = ""): Promise<number> {
  let total = 0;
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) total += await filesBytes(join(dir, entry.name), keep, path);
    else if (entry.isFile() && keep(path)) total += (await stat(join(dir, entry.name))).size;
  }
  return total;
}

/**
 * Waits until `count()` reaches `target`; gives up (saying how far it got) when the count has not
 * moved for STALL_MS — a side that dropped samples must not hold the bench for minutes.
 */
async function reach(what: string, count: () => Promise<number>, target: number): Promise<void> {
  let last = -1;
  let movedAt = performance.now();
  for (;;) {
    const now = await count();
    if (now >= target) return;
    if (now !== last) [last, movedAt] = [now, performance.now()];
    else if (performance.now() - movedAt > STALL_MS) {
      benchLog(`${what}: stuck at ${now} of ${target} for ${STALL_MS} ms; going on`);
      return;
    }
    await sleep(POLL_MS);
  }
}

/** The value of one sample line of a Prometheus text exposition (summed over matching lines). */
function exposition(text: string, metric: RegExp): number {
  let total = 0;
  for (const line of text.split("\n"))
    if (metric.test(line)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  return total;
}

/** CPU of a Node service and its nats-server: in all, and by process (the service by thread). */
function serviceAndNatsCpu(
  servicePid: number,
  nats: { readonly pid: number | undefined },
): Pick<BenchSide, "cpuSeconds" | "cpuParts"> {
  return {
    cpuSeconds: () => {
      const pid = nats.pid;
      return pid === undefined ? undefined : treeCpuSeconds([servicePid, pid]);
    },
    cpuParts: () => {
      const parts = new Map<string, number>();
      const natsPid = nats.pid;
      if (natsPid !== undefined) parts.set("nats-server", treeCpuSeconds([natsPid]) ?? 0);
      for (const [thread, seconds] of threadCpuSeconds(servicePid) ?? [])
        parts.set(`service/${thread}`, seconds);
      return parts;
    },
  };
}

/** Ours: a private nats-server, then the service with the stream on it and a tenant for the bench. */
export async function startOurs(options: { tmpDir: string; nodeOptions?: string }): Promise<BenchSide> {
  const nats = await spawnNats({ maxFileStoreBytes: 2 * 1024 ** 3, install: false });
  const adminToken = randomBytes(24).toString("hex");
  // Unique per run: with DATABASE_URL set the tenants live in a PostgreSQL that outlives the bench.
  const tenant = `bench-${randomBytes(4).toString("hex")}`;
  const tsdbDir = join(options.tmpDir, "metrics-tsdb");
  let service: Awaited<ReturnType<typeof startServerProcess>>;
  try {
    service = await startServerProcess({
      name: "metrics",
      entry: new URL("../src/main.ts", import.meta.url),
      readyTimeoutMs: 60_000,
      env: {
        CASEBOOK_DATA: options.tmpDir,
        METRICS_TSDB_DIR: tsdbDir,
        METRICS_ROLLUP_DIR: join(options.tmpDir, "metrics-rollups"),
        NATS_URL: nats.url,
        METRICS_ADMIN_TOKEN: adminToken,
        METRICS_BOOTSTRAP_TENANT: "off",
        METRICS_STREAM_MAX_BYTES: String(1024 ** 3),
        ...(options.nodeOptions ? { NODE_OPTIONS: options.nodeOptions } : {}),
      },
    });
  } catch (error) {
    await nats.stop();
    throw error;
  }
  const created = await fetch(`${service.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ id: tenant, name: tenant }),
  });
  if (created.status !== 201) {
    const text = await created.text();
    await service.stop();
    await nats.stop();
    throw new Error(`metrics: creating the bench tenant answered ${created.status}: ${text}`);
  }
  const key = ((await created.json()) as { apiKey: { key: string } }).apiKey.key;
  const auth = { authorization: `Bearer ${key}` };
  let closed = false;
  return {
    name: "metrics",
    counted:
      "the service process (ingest, hot writer, rollup builder + DuckDB, alert evaluator) + nats-server",
    writeUrl: `${service.url}/api/v1/write`,
    writeHeaders: { ...REMOTE_WRITE_HEADERS, ...auth },
    queryUrl: service.url,
    queryHeaders: auth,
    queryParams: {},
    ...serviceAndNatsCpu(service.pid, nats),
    stored: (samples) =>
      reach(
        "metrics: the hot writer storing every acknowledged sample",
        async () => {
          const text = await (await fetch(`${service.url}/metrics`)).text();
          return exposition(text, new RegExp(`^metrics_ingested_samples_total\\{tenant="${tenant}"`));
        },
        samples,
      ),
    storage: async () => {
      if (!closed) throw new Error("metrics: storage is read after close (the TSDB is opened here)");
      const db = await Tsdb.open({
        dir: join(tsdbDir, tenant),
        blockRangeMs: BLOCK_RANGE_MS,
        limits: { maxSeries: 100_000_000, maxSeriesPerMetric: 100_000_000 },
      });
      try {
        const range = db.head.timeRange();
        if (range !== undefined)
          await db.compact(Math.ceil((range.maxt + 1) / BLOCK_RANGE_MS) * BLOCK_RANGE_MS);
        const samples = db.blocks.reduce((n, b) => n + b.numSamples, 0);
        const bytes = await filesBytes(join(tsdbDir, tenant, "blocks"), (p) => /\/(chunks|index)$/.test(p));
        return {
          bytes,
          samples,
          how: `${db.blocks.length} blocks (the head compacted offline), chunks + index`,
        };
      } finally {
        await db.close();
      }
    },
    close: async () => {
      closed = true;
      await service.stop();
      await nats.stop();
    },
  };
}

/** What the floor decodes beside the hop (`FLOOR_DECODE` of bench/stream-floor.ts). */
export const FLOOR_DECODES = ["none", "ingest", "every-reader"] as const;
export type FloorDecode = (typeof FLOOR_DECODES)[number];

/**
 * The floor (bench/stream-floor.ts): remote-write bodies published to a private nats-server as
 * they arrive, read and acked by three consumers — the stream hop alone, or with the bodies
 * decoded at the ingest (`decode` "ingest") or there and in each consumer ("every-reader").
 */
export async function startStreamFloor(decode: FloorDecode = "none"): Promise<BenchSide> {
  const nats = await spawnNats({ maxFileStoreBytes: 2 * 1024 ** 3, install: false });
  let floor: Awaited<ReturnType<typeof startServerProcess>>;
  try {
    floor = await startServerProcess({
      name: "stream-floor",
      entry: new URL("./stream-floor.ts", import.meta.url),
      env: { NATS_URL: nats.url, FLOOR_DECODE: decode },
    });
  } catch (error) {
    await nats.stop();
    throw error;
  }
  const unread = async () => {
    const text = await (await fetch(`${floor.url}/metrics`)).text();
    const published = exposition(text, /^floor_published_messages /);
    const lines = text.split("\n").filter((l) => l.startsWith("floor_consumed_messages"));
    return published - Math.min(...lines.map((l) => Number(l.slice(l.lastIndexOf(" ") + 1))));
  };
  return {
    name: "stream-floor",
    counted: "the floor's process (publish, three consumers) + nats-server",
    ingestOnly: true,
    writeUrl: `${floor.url}/api/v1/write`,
    writeHeaders: REMOTE_WRITE_HEADERS,
    queryUrl: floor.url,
    queryHeaders: {},
    queryParams: {},
    ...serviceAndNatsCpu(floor.pid, nats),
    // Its consumers count messages, not samples: stored once every consumer read every message.
    stored: () =>
      reach("stream-floor: every consumer reading every message", async () => -(await unread()), 0),
    storage: () => Promise.reject(new Error("stream-floor keeps nothing: it takes part in the ingest only")),
    close: async () => {
      await floor.stop();
      await nats.stop();
    },
  };
}

/** Prometheus 2.42 receiving remote-write, with the admin API for its snapshot. */
export async function startPrometheus(): Promise<BenchSide> {
  const prom = await spawnPrometheus({
    install: false,
    args: ["--web.enable-admin-api", "--storage.tsdb.retention.time=30d", "--log.level=warn"],
  });
  const pid = prom.pid;
  return {
    name: "prometheus",
    counted: "the prometheus process",
    writeUrl: `${prom.url}/api/v1/write`,
    writeHeaders: REMOTE_WRITE_HEADERS,
    queryUrl: prom.url,
    queryHeaders: {},
    queryParams: {},
    cpuSeconds: () => (pid === undefined ? undefined : treeCpuSeconds([pid])),
    // Prometheus appends to its head before it answers: stored and queryable at the 204.
    stored: async () => {},
    storage: async () => {
      const res = await fetch(`${prom.url}/api/v1/admin/tsdb/snapshot?skip_head=false`, { method: "POST" });
      const body = (await res.json()) as { data?: { name?: string } };
      if (res.status !== 200 || body.data?.name === undefined)
        throw new Error(`prometheus: snapshot answered ${res.status}: ${JSON.stringify(body)}`);
      const dir = join(prom.dir, "data", "snapshots", body.data.name);
      const blocks = (await readdir(dir, { withFileTypes: true })).filter((e) => e.isDirectory());
      let samples = 0;
      for (const block of blocks) {
        const meta = JSON.parse(await readFile(join(dir, block.name, "meta.json"), "utf8")) as {
          stats?: { numSamples?: number };
        };
        samples += meta.stats?.numSamples ?? 0;
      }
      const bytes = await filesBytes(dir, (p) => /\/(chunks\/\d+|index)$/.test(p));
      return { bytes, samples, how: `snapshot with the head: ${blocks.length} blocks, chunks + index` };
    },
    close: () => prom.stop(),
  };
}

/** VictoriaMetrics 1.79.5: its rollup result cache off, no latency offset (the data is in the past). */
export async function startVictoriaMetrics(): Promise<BenchSide> {
  const vm = await spawnVictoriaMetrics({
    install: false,
    args: ["-search.latencyOffset=0s", "-search.disableCache", "-retentionPeriod=1y", "-loggerLevel=WARN"],
  });
  const pid = vm.pid;
  const cpuSeconds = () => (pid === undefined ? undefined : treeCpuSeconds([pid]));
  const rows = async () => {
    const text = await (await fetch(`${vm.url}/metrics`)).text();
    return exposition(text, /^vm_rows\{type="(storage\/(big|small)|indexdb)"/);
  };
  return {
    name: "victoria-metrics",
    counted: "the victoria-metrics process",
    writeUrl: `${vm.url}/api/v1/write`,
    writeHeaders: REMOTE_WRITE_HEADERS,
    queryUrl: vm.url,
    queryHeaders: {},
    queryParams: { nocache: "1" },
    cpuSeconds,
    // VM buffers rows in memory for up to a second before they are searchable: flush, then ask.
    stored: async (samples) => {
      await reach(
        "victoria-metrics: every acknowledged row in its parts",
        async () => {
          await fetch(`${vm.url}/internal/force_flush`);
          const text = await (await fetch(`${vm.url}/metrics`)).text();
          return exposition(text, /^vm_rows\{type="storage\/(big|small)"/);
        },
        samples,
      );
    },
    storage: async () => {
      await fetch(`${vm.url}/internal/force_flush`);
      await fetch(`${vm.url}/internal/force_merge`);
      // force_merge runs in the background: wait for the CPU to go quiet, then for the parts to settle.
      let last = cpuSeconds() ?? 0;
      for (let quiet = 0, i = 0; quiet < 3 && i < 240; i++) {
        await sleep(500);
        const now = cpuSeconds() ?? 0;
        quiet = now - last < 0.02 ? quiet + 1 : 0;
        last = now;
      }
      const dataDir = join(vm.dir, "data");
      const bytes = await filesBytes(dataDir, (p) => /^(data|indexdb)\//.test(p));
      benchLog(`victoria-metrics: ${await rows()} rows (vm_rows) after the merge`);
      return { bytes, samples: undefined, how: "data/ + indexdb/ after force_flush and force_merge" };
    },
    close: () => vm.stop(),
  };
}
