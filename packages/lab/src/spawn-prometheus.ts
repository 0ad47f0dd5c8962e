/**
 * A throw-away Prometheus that accepts remote write (`--web.enable-remote-write-receiver`),
 * with its own config file and TSDB dir in a temp dir, on a free loopback port — never the
 * system instance Debian's postinst starts on :9090. Readiness is `GET /-/ready` → 200 on a
 * socket this prometheus holds. `backfill` (OpenMetrics text) is turned into TSDB blocks in
 * that dir by `promtool tsdb create-blocks-from openmetrics` before the start, so a test
 * queries Prometheus over exactly the samples it wrote elsewhere (no scrape timing).
 *
 * @example
 * const prom = await spawnPrometheus();   // no scrape jobs: it only receives
 * await fetch(`${prom.url}/api/v1/write`, { method: "POST", body: snappyProtobuf, headers });
 * await fetch(`${prom.url}/api/v1/query?query=up`);
 * const old = await spawnPrometheus({ backfill: 'up{job="a"} 1 1700000000\n# EOF\n' });
 */
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ensureExecutable } from "./executables.ts";
import { httpProbe } from "./http-probe.ts";
import { labErrors } from "./lab-errors.ts";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";

export interface SpawnPrometheusOptions extends ServerEngineOptions {
  /** prometheus.yml. Default: a global block only (no scrape jobs). */
  config?: string;
  /** Extra flags (`--storage.tsdb.retention.time=1h`). */
  args?: string[];
  probeTimeoutMs?: number;
  /**
   * OpenMetrics text (ending `# EOF`) written into the TSDB as blocks by promtool before the
   * start. Its samples must be younger than the retention (15 d by default) or Prometheus
   * deletes the blocks at once.
   */
  backfill?: string;
}

/** A private Prometheus: `url` is `http://127.0.0.1:<port>`; its TSDB is `dir/data`. */
export type SpawnedPrometheus = SpawnedServer;

const DEFAULT_CONFIG = "global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n";
/** promtool reads the whole file in one go; a minute covers ~10⁶ samples on a loaded machine. */
const BACKFILL_TIMEOUT_MS = 60_000;

/** `promtool tsdb create-blocks-from openmetrics <file> <dataDir>`; its output in the error. */
async function createBlocks(dir: string, openMetrics: string, install: boolean): Promise<void> {
  const promtool = await ensureExecutable("promtool", { debianPackage: "prometheus", install });
  const input = join(dir, "backfill.om");
  await writeFile(input, openMetrics);
  await new Promise<void>((resolve, reject) => {
    execFile(
      promtool,
      ["tsdb", "create-blocks-from", "openmetrics", "--quiet", input, join(dir, "data")],
      { timeout: BACKFILL_TIMEOUT_MS, maxBuffer: 1024 * 1024 },
      (error, stdout, stderr) => {
        if (!error) return resolve();
        reject(
          labErrors.create("LAB_ENGINE_START_FAILED", {
            detail: `promtool tsdb create-blocks-from openmetrics failed: ${stderr.trim().split("\n").at(-1) ?? ""}`,
            fields: { program: "promtool", log: `${stdout}${stderr}`.slice(-4_000) },
            cause: error,
          }),
        );
      },
    );
  });
}

/** Starts Prometheus on a free loopback port (see the module's example). */
export function spawnPrometheus(options: SpawnPrometheusOptions = {}): Promise<SpawnedPrometheus> {
  return spawnServerEngine(
    {
      name: "prometheus",
      program: "prometheus",
      debianPackage: "prometheus",
      dirPrefix: "casebook-prometheus-",
      prepare: async (dir) => {
        await writeFile(join(dir, "prometheus.yml"), options.config ?? DEFAULT_CONFIG);
        if (options.backfill !== undefined)
          await createBlocks(dir, options.backfill, options.install ?? true);
      },
      args: (port, dir) => [
        `--config.file=${join(dir, "prometheus.yml")}`,
        `--storage.tsdb.path=${join(dir, "data")}`,
        `--web.listen-address=127.0.0.1:${port}`,
        "--web.enable-remote-write-receiver",
        "--web.enable-lifecycle",
        ...(options.args ?? []),
      ],
      answers: async (port) =>
        (await httpProbe(port, "/-/ready", { timeoutMs: options.probeTimeoutMs ?? 1_000 }))?.status === 200,
      url: (port) => `http://127.0.0.1:${port}`,
    },
    options,
  );
}
