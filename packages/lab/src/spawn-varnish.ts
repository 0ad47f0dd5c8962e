/**
 * A throw-away Varnish with the caller's VCL: `varnishd -F` (foreground) with `-j none`
 * (no jail: the unpacked-binary and root cases need no varnish users), `-n DIR` (its
 * working dir, shared memory log and compiled VCL in our temp dir), a malloc store, and no
 * management port. Readiness is a GET answered on a socket this varnishd holds.
 *
 * @example
 * const varnish = await spawnVarnish({
 *   vcl: `vcl 4.1;\nbackend default { .host = "127.0.0.1"; .port = "${nginx.port}"; }`,
 * });
 * await fetch(varnish.url);  // through the cache
 */
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { httpProbe } from "./http-probe.ts";
import { type ServerEngineOptions, type SpawnedServer, spawnServerEngine } from "./server-engine.ts";

export interface SpawnVarnishOptions extends ServerEngineOptions {
  /** The VCL program (starts with `vcl 4.1;`). */
  vcl: string;
  /** Malloc storage size. Default "64m". */
  storage?: string;
  /** Extra runtime parameters, `-p name=value` each. */
  params?: Record<string, string>;
  /** Path GET for readiness (any answer counts, a 503 from a missing backend too). Default "/". */
  readyPath?: string;
  probeTimeoutMs?: number;
}

/** A private Varnish: `url` is `http://127.0.0.1:<port>`. */
export type SpawnedVarnish = SpawnedServer;

/** Starts varnishd on a free loopback port with the caller's VCL (see the module's example). */
export function spawnVarnish(options: SpawnVarnishOptions): Promise<SpawnedVarnish> {
  return spawnServerEngine(
    {
      name: "varnish",
      program: "varnishd",
      debianPackage: "varnish",
      dirPrefix: "casebook-varnish-",
      prepare: (dir) => writeFile(join(dir, "default.vcl"), options.vcl),
      args: (port, dir) => [
        "-F",
        ...["-j", "none"],
        ...["-n", join(dir, "work")],
        ...["-a", `127.0.0.1:${port}`],
        ...["-f", join(dir, "default.vcl")],
        ...["-s", `malloc,${options.storage ?? "64m"}`],
        ...["-T", "none"],
        ...Object.entries(options.params ?? {}).flatMap(([name, value]) => ["-p", `${name}=${value}`]),
      ],
      answers: async (port) =>
        (await httpProbe(port, options.readyPath ?? "/", { timeoutMs: options.probeTimeoutMs ?? 1_000 })) !==
        undefined,
      url: (port) => `http://127.0.0.1:${port}`,
    },
    options,
  );
}
