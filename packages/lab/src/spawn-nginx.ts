/**
 * A throw-away nginx with the caller's `http {}` block: its own prefix dir (`-p DIR`), every
 * `*_temp_path` and the error log in that dir, `daemon off`, so it runs beside (and never
 * touches) the nginx Debian's postinst may have started on :80. The caller's block must
 * `listen 127.0.0.1:<port>` on the port it is given; readiness is a GET of `readyPath`
 * answered (any status) on a socket this nginx holds.
 *
 * @example
 * const nginx = await spawnNginx({
 *   http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "hello\n"; } }`,
 * });
 * await fetch(nginx.url);   // "hello"
 * await nginx.stop();
 */

import { writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { httpProbe } from "./http-probe.ts";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";

export interface SpawnNginxOptions extends ServerEngineOptions {
  /** The contents of the `http {}` block for this start's port and dir: servers, upstreams, caches. */
  http: (port: number, dir: string) => string;
  /** Directives at the top level (`worker_rlimit_nofile 4096;`). */
  main?: string;
  /** Default 1. */
  workerProcesses?: number | "auto";
  /** Default 1024. */
  workerConnections?: number;
  /** Path GET for readiness. Default "/". */
  readyPath?: string;
  /** Bound on one readiness request. Default 1 000 ms. */
  probeTimeoutMs?: number;
}

/** A private nginx: `url` is `http://127.0.0.1:<port>`; `dir/error.log` is its error log. */
export type SpawnedNginx = SpawnedServer;

const TEMP_PATHS = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] as const;

/** The whole nginx.conf of one start (exported for tests and for reading what ran). */
export function nginxConfig(options: SpawnNginxOptions, port: number, dir: string): string {
  const asRoot = process.getuid?.() === 0;
  return [
    "daemon off;",
    "master_process on;",
    // As root the workers would run as nobody, who cannot write the temp paths in our 0700 dir.
    ...(asRoot ? ["user root root;"] : []),
    `worker_processes ${options.workerProcesses ?? 1};`,
    `pid ${join(dir, "nginx.pid")};`,
    `error_log ${join(dir, "error.log")} warn;`,
    options.main ?? "",
    `events { worker_connections ${options.workerConnections ?? 1024}; }`,
    "http {",
    "  access_log off;",
    ...TEMP_PATHS.map((name) => `  ${name}_temp_path ${join(dir, "temp", name)};`),
    options.http(port, dir),
    "}",
    "",
  ].join("\n");
}

/** Starts nginx on a free loopback port with the caller's config (see the module's example). */
export function spawnNginx(options: SpawnNginxOptions): Promise<SpawnedNginx> {
  const conf = (dir: string) => join(dir, "nginx.conf");
  return spawnServerEngine(
    {
      name: "nginx",
      program: "nginx",
      debianPackage: "nginx",
      dirPrefix: "casebook-nginx-",
      prepare: async (dir) => {
        for (const name of TEMP_PATHS) await mkdir(join(dir, "temp", name), { recursive: true });
        await writeFile(join(dir, "error.log"), "");
      },
      args: (port, dir) => {
        writeFileSync(conf(dir), nginxConfig(options, port, dir));
        // -e: the log of start-up errors before the config is read (Debian's default is /var/log/nginx).
        return ["-p", dir, "-c", conf(dir), "-e", join(dir, "error.log")];
      },
      answers: async (port) =>
        (await httpProbe(port, options.readyPath ?? "/", { timeoutMs: options.probeTimeoutMs ?? 1_000 })) !==
        undefined,
      stopSignal: "SIGQUIT", // graceful: finish the requests in flight
      url: (port) => `http://127.0.0.1:${port}`,
    },
    options,
  );
}
