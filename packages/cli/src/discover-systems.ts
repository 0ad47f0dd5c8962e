/**
 * Finds the systems of a repository: every `systems/<name>/package.json`, with
 * its manifest validated. A folder without a package.json is not a system yet
 * and is passed over; an invalid manifest fails discovery with every problem of
 * every file listed, so nothing starts on a half-understood configuration.
 *
 * @example
 * const systems = discoverSystems("/home/me/casebook");
 * systems.map((s) => `${s.name}:${s.manifest.port}`); // ["rate-limiter:8101", …]
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cliErrors } from "./cli-errors.ts";
import { didYouMean } from "./did-you-mean.ts";
import { parseManifest, type SystemManifest } from "./manifest.ts";

export interface SystemInfo {
  /** Folder name under systems/, also the name used on the command line. */
  name: string;
  /** Absolute path of the system folder. */
  dir: string;
  /** The package.json path relative to the repository root, for messages. */
  file: string;
  manifest: SystemManifest;
}

export interface PortCollision {
  port: number;
  /** Systems that would listen on `port`, in name order. */
  names: string[];
}

export function discoverSystems(root: string): SystemInfo[] {
  const systemsDir = join(root, "systems");
  if (!existsSync(systemsDir)) return [];
  const names = readdirSync(systemsDir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith("."))
    .map((entry) => entry.name)
    .sort();
  const systems: SystemInfo[] = [];
  const problems: string[] = [];
  for (const name of names) {
    const dir = join(systemsDir, name);
    const file = `systems/${name}/package.json`;
    const path = join(dir, "package.json");
    if (!existsSync(path)) continue;
    let pkg: unknown;
    try {
      pkg = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      problems.push(`${file}: is not valid JSON (${(error as Error).message})`);
      continue;
    }
    const result = parseManifest(pkg, file, name);
    problems.push(...result.problems);
    if (result.manifest) systems.push({ name, dir, file, manifest: result.manifest });
  }
  if (problems.length > 0) {
    throw cliErrors.create("CLI_MANIFEST_INVALID", {
      detail: `Invalid system manifest${problems.length > 1 ? "s" : ""}:\n  ${problems.join("\n  ")}`,
      fields: { problems },
    });
  }
  return systems;
}

/** Ports claimed by more than one system, in port order. */
export function findPortCollisions(claims: readonly { name: string; port: number }[]): PortCollision[] {
  const byPort = new Map<number, string[]>();
  for (const { name, port } of claims) byPort.set(port, [...(byPort.get(port) ?? []), name]);
  return [...byPort]
    .filter(([, names]) => names.length > 1)
    .map(([port, names]) => ({ port, names: names.sort() }))
    .sort((a, b) => a.port - b.port);
}

/** The system called `name`, or CLI_SYSTEM_UNKNOWN with the closest name (or the known ones) as a hint. */
export function findSystem(systems: readonly SystemInfo[], name: string): SystemInfo {
  const system = systems.find((s) => s.name === name);
  if (system !== undefined) return system;
  const known = systems.map((s) => s.name);
  const guess = didYouMean(name, known);
  throw cliErrors.create("CLI_SYSTEM_UNKNOWN", {
    detail: `No system named '${name}'.`,
    fields: {
      hint: guess
        ? `Did you mean '${guess}'?`
        : known.length > 0
          ? `Known systems: ${known.join(", ")}.`
          : "No system is built yet.",
    },
  });
}
