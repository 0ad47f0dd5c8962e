/**
 * A throw-away Prometheus that accepts remote write (`--web.enable-remote-write-receiver`),
 * with its own config file and TSDB dir in a temp dir, on a free loopback port — never the
 * system instance Debian's postinst starts on :9090. Readiness is `GET /-/ready` → 200 on a
 * socket this prometheus holds.
 *
 * @example
 * const prom = await spawnPrometheus();   // no scrape jobs: it only receives
 * await fetch(`${prom.url}/api/v1/write`, { method: "POST", body: snappyProtobuf, headers });
 * await fetch(`${prom.url}/api/v1/query?query=up`);
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { httpProbe } from "./http-probe.ts";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";

export interface SpawnPrometheusOptions extends ServerEngineOptions {
  /** prometheus.yml. Default: a global block only (no scrape jobs). */
  config?: string;
  /** Extra flags (`--storage.tsdb.retention.time=1h`). */
  args?: string[];
  probeTimeoutMs?: number;
}

/** A private Prometheus: `url` is `http://127.0.0.1:<port>`; its TSDB is `dir/data`. */
export type SpawnedPrometheus = SpawnedServer;

const DEFAULT_CONFIG = "global:\n  scrape_interval: 15s\n  evaluation_interval: 15s\n";

/** Starts Prometheus on a free loopback port (see the module's example). */
export function spawnPrometheus(options: SpawnPrometheusOptions = {}): Promise<SpawnedPrometheus> {
  return spawnServerEngine(
    {
      name: "prometheus",
      program: "prometheus",
      debianPackage: "prometheus",
      dirPrefix: "casebook-prometheus-",
      prepare: (dir) => writeFile(join(dir, "prometheus.yml"), options.config ?? DEFAULT_CONFIG),
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
