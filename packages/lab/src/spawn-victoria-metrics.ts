/**
 * A throw-away VictoriaMetrics (single node, Debian's `victoria-metrics`) with its own
 * storage dir in a temp dir, on a free loopback port. It takes Prometheus remote write at
 * `/api/v1/write`, the text format at `/api/v1/import/prometheus`, and answers PromQL-like
 * (MetricsQL) queries at `/api/v1/query`. Readiness is `GET /health` → 200 on a socket this
 * process holds.
 *
 * @example
 * const vm = await spawnVictoriaMetrics();
 * await fetch(`${vm.url}/api/v1/import/prometheus`, { method: "POST", body: "up 1\n" });
 */

import { join } from "node:path";
import { httpProbe } from "./http-probe.ts";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";

export interface SpawnVictoriaMetricsOptions extends ServerEngineOptions {
  /** Extra flags (`-retentionPeriod=1d`, `-search.latencyOffset=0s`). */
  args?: string[];
  probeTimeoutMs?: number;
}

/** A private VictoriaMetrics: `url` is `http://127.0.0.1:<port>`; its storage is `dir/data`. */
export type SpawnedVictoriaMetrics = SpawnedServer;

/** Starts victoria-metrics on a free loopback port (see the module's example). */
export function spawnVictoriaMetrics(
  options: SpawnVictoriaMetricsOptions = {},
): Promise<SpawnedVictoriaMetrics> {
  return spawnServerEngine(
    {
      name: "victoria-metrics",
      program: "victoria-metrics",
      debianPackage: "victoria-metrics",
      dirPrefix: "casebook-victoria-metrics-",
      args: (port, dir) => [
        `-httpListenAddr=127.0.0.1:${port}`,
        `-storageDataPath=${join(dir, "data")}`,
        ...(options.args ?? []),
      ],
      answers: async (port) =>
        (await httpProbe(port, "/health", { timeoutMs: options.probeTimeoutMs ?? 1_000 }))?.status === 200,
      url: (port) => `http://127.0.0.1:${port}`,
    },
    options,
  );
}
