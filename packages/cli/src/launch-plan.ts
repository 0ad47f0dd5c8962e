/**
 * Turns discovered systems and the command line into what to start: for each
 * system the entry file, port, URL, engine label and the child's environment.
 *
 * The child's environment contract (every system's `main.ts` reads these):
 * - `PORT`, `HOST`: where to listen for HTTP (`/healthz` is probed there);
 * - `DATABASE_URL`: PostgreSQL when set, else the embedded PGlite;
 * - `REDIS_URL`: Redis when set, else the in-process store;
 * - `CASEBOOK_DATA`: the system's own data directory (PGlite files and the like).
 * The manifest's `env` gives defaults; the caller's environment wins over them.
 *
 * @example
 * const { plans, skipped } = planLaunch(discoverSystems(root), {
 *   root, names: [], host: "127.0.0.1", portOverrides: new Map(), honourPortEnv: false, args: [], env: process.env,
 * });
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { cliErrors } from "./cli-errors.ts";
import { findPortCollisions, findSystem, type SystemInfo } from "./discover-systems.ts";
import { pathInDataRoot } from "./foreground.ts";
import type { CallDeclaration, EngineKind, GrantDeclaration, ScrapeDeclaration } from "./manifest.ts";

export interface LaunchOptions {
  root: string;
  /** Systems asked for by name; empty means every system ready to run. */
  names: readonly string[];
  host: string;
  /** Ports from the command line, by system name; they win over everything else. */
  portOverrides: ReadonlyMap<string, number>;
  /** `casebook run` honours a plain `PORT`; `up` starts several systems, so it cannot. */
  honourPortEnv: boolean;
  /** Extra arguments for the child's entry (`casebook run <name> -- …`). */
  args: readonly string[];
  env: NodeJS.ProcessEnv;
}

export interface SystemPlan {
  name: string;
  title: string;
  dir: string;
  /** Absolute path of the entry file run with Node. */
  entry: string;
  args: string[];
  host: string;
  port: number;
  /** Where the CLI probes `/healthz` and what it prints. */
  url: string;
  /** "pglite (embedded)", "postgres", "redis", "own memory", … (engineLabel) */
  engine: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  /** The manifest's `try` template (`{url}`, `{resp}`), for the block below `up`'s table. */
  tryTemplate?: string;
  /** It scrapes the other services' /metrics (`scrape-plan.ts` fills in where they are). */
  scrapes?: ScrapeDeclaration;
  /** The systems it calls and how it gives keys to its callers (`call-plan.ts` wires them). */
  calls?: CallDeclaration[];
  grants?: GrantDeclaration;
  /** Filled in by `wireCalls`: the grants' `callerNote`, one per caller given a key. */
  callerNotes?: string[];
}

export interface LaunchSelection {
  plans: SystemPlan[];
  /** Systems left out of a plain `casebook up`, each with the reason. */
  skipped: { name: string; reason: string }[];
}

export function planLaunch(systems: readonly SystemInfo[], options: LaunchOptions): LaunchSelection {
  const skipped: LaunchSelection["skipped"] = [];
  const chosen: SystemInfo[] = [];
  if (options.names.length > 0) {
    for (const name of options.names) chosen.push(requireRunnable(systems, name));
  } else {
    for (const system of systems) {
      const reason = notRunnableReason(system);
      if (reason === undefined) chosen.push(system);
      else skipped.push({ name: system.name, reason });
    }
  }
  const plans = chosen.map((system) => planOne(system, options));
  const collisions = findPortCollisions(plans);
  if (collisions.length > 0) {
    const lines = collisions.map((c) => `port ${c.port}: ${c.names.join(", ")}`);
    throw cliErrors.create("CLI_PORT_COLLISION", {
      detail: `Two systems would listen on the same port (${lines.join("; ")}).`,
      fields: {
        collisions,
        hint: `Give one another port, e.g. ${portOverrideHint(collisions[0]!.names[1]!)}.`,
      },
    });
  }
  return { plans, skipped };
}

/** The variable that overrides one system's port in `casebook up`: `CASEBOOK_PORT_RATE_LIMITER`. */
export function portEnvName(name: string): string {
  return `CASEBOOK_PORT_${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}`;
}

/** How to move `name` to another port, for error hints. */
export function portOverrideHint(name: string, port = 8150): string {
  return `\`casebook up --port ${name}=${port}\` or \`${portEnvName(name)}=${port} npm start\``;
}

/**
 * What the "engine" column says for a system using `engines` under `env`: the engine each role
 * really runs on — `postgres` when DATABASE_URL is set, else `pglite (embedded)`; `redis` when
 * REDIS_URL (or REDIS_CLUSTER_NODES) is set, else `in-process (embedded)`; a system with no
 * engine of ours (the cache is one) keeps its data in its own memory.
 */
export function engineLabel(engines: readonly EngineKind[], env: NodeJS.ProcessEnv): string {
  if (engines.length === 0) return "own memory";
  const parts = engines.map((kind) => {
    if (kind === "sql") return isSet(env.DATABASE_URL) ? "postgres" : "pglite (embedded)";
    return isSet(env.REDIS_URL) || isSet(env.REDIS_CLUSTER_NODES) ? "redis" : "in-process (embedded)";
  });
  return parts.join(" + ");
}

/** The host to probe and print: a wildcard bind is reached through loopback. */
export function urlFor(host: string, port: number): string {
  const reach = host === "0.0.0.0" || host === "::" || host === "" ? "127.0.0.1" : host;
  return `http://${reach.includes(":") ? `[${reach}]` : reach}:${port}`;
}

function notRunnableReason(system: SystemInfo): string | undefined {
  if (system.manifest.status === "planned") return "planned";
  if (!existsSync(join(system.dir, system.manifest.main))) {
    return `${system.manifest.status}, ${system.manifest.main} not written yet`;
  }
  return undefined;
}

function requireRunnable(systems: readonly SystemInfo[], name: string): SystemInfo {
  const system = findSystem(systems, name);
  const entry = join(system.dir, system.manifest.main);
  if (!existsSync(entry)) {
    throw cliErrors.create("CLI_ENTRY_MISSING", {
      detail: `${name} (${system.manifest.status}) has no ${system.manifest.main} yet (casebook.main in ${system.file}).`,
      fields: { entry },
    });
  }
  return system;
}

function planOne(system: SystemInfo, options: LaunchOptions): SystemPlan {
  const port = choosePort(system, options);
  const dataDir = pathInDataRoot(options.root, options.env, system.name);
  return {
    name: system.name,
    title: system.manifest.title,
    dir: system.dir,
    entry: join(system.dir, system.manifest.main),
    args: [...options.args],
    host: options.host,
    port,
    url: urlFor(options.host, port),
    engine: engineLabel(system.manifest.engines, options.env),
    dataDir,
    ...(system.manifest.try === undefined ? {} : { tryTemplate: system.manifest.try }),
    ...(system.manifest.scrapes === undefined ? {} : { scrapes: system.manifest.scrapes }),
    ...(system.manifest.calls.length === 0 ? {} : { calls: system.manifest.calls }),
    ...(system.manifest.grants === undefined ? {} : { grants: system.manifest.grants }),
    env: {
      ...system.manifest.env,
      ...options.env,
      PORT: String(port),
      HOST: options.host,
      CASEBOOK_DATA: dataDir,
    },
  };
}

function choosePort(system: SystemInfo, options: LaunchOptions): number {
  const flag = options.portOverrides.get(system.name);
  if (flag !== undefined) return flag;
  if (options.honourPortEnv && isSet(options.env.PORT)) return parsePort(options.env.PORT!, "PORT");
  const variable = portEnvName(system.name);
  const value = options.env[variable];
  if (isSet(value)) return parsePort(value!, variable);
  return system.manifest.port;
}

/** A TCP port from user input; `source` names the flag or variable in the error. */
export function parsePort(value: string, source: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isInteger(port) || port < 1 || port > 65_535) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `${source}=${value} is not a port; use an integer in 1–65535.`,
    });
  }
  return port;
}

function isSet(value: string | undefined): boolean {
  return value !== undefined && value !== "";
}
