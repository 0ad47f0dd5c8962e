/**
 * `casebook list`: every system with its status, port, what exists of it and its tools.
 *
 * @example
 * const code = await listCommand(["--json"], io); // prints a JSON array, returns 0
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type MappedSystem, mappedPort, plannedSystems } from "./architecture-map.ts";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { parseCommandArgs } from "./command-args.ts";
import { discoverSystems, findPortCollisions, type SystemInfo } from "./discover-systems.ts";
import { helpText } from "./help.ts";
import type { EngineKind, SystemStatus } from "./manifest.ts";
import { findRepoRoot } from "./repo-root.ts";
import { renderTable } from "./table.ts";

export async function listCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs("list", argv, {
    json: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help) {
    io.out(helpText("list"));
    return 0;
  }
  if (positionals.length > 0) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `\`casebook list\` takes no names (got ${positionals.join(" ")}).`,
      fields: { hint: "Run `casebook list --help`." },
    });
  }
  const root = findRepoRoot(io.cliDir, io.env);
  const systems = discoverSystems(root);
  // The designs of the map not yet in systems/: listed as planned, so the list is the whole plan.
  const planned = plannedSystems(
    root,
    systems.map((s) => s.name),
  ).map(describePlanned);
  const rows = [...systems.map(describe), ...planned];
  if (values.json) io.out(`${JSON.stringify(rows, null, 2)}\n`);
  else if (rows.length === 0) io.out(noSystemMessage(root));
  else {
    const table = rows.map((r) => [
      r.name,
      r.status,
      String(r.port),
      r.title,
      r.mainExists ? r.main : r.main === "" ? "—" : `${r.main} (not yet)`,
      r.benchExists ? r.bench : "—",
      r.tools.length > 0 ? r.tools.join(", ") : "—",
    ]);
    io.out(renderTable(["system", "status", "port", "design", "main", "bench", "tools"], table));
  }
  const collisions = findPortCollisions(systems.map((s) => ({ name: s.name, port: s.manifest.port })));
  for (const c of collisions) {
    io.err(
      `casebook: port ${c.port} is claimed by ${c.names.join(" and ")}; give each its own casebook.port\n`,
    );
  }
  return collisions.length > 0 ? 1 : 0;
}

/** What `list` and `up` say when systems/ holds no system. */
export function noSystemMessage(root: string): string {
  return (
    `No system is built yet: ${join(root, "systems")} has none.\n` +
    "The fourteen designs are listed in README.md; each arrives as systems/<name>/ with a\n" +
    'package.json whose "casebook" field names its title, status, main and port.\n'
  );
}

/** A design of the map with no folder yet: planned, nothing of it exists. */
function describePlanned(system: MappedSystem): ReturnType<typeof describe> {
  return {
    name: system.name,
    title: system.title,
    status: "planned",
    port: mappedPort(system),
    main: "",
    mainExists: false,
    bench: "",
    benchExists: false,
    engines: [],
    tools: [],
  };
}

function describe(system: SystemInfo) {
  const { manifest } = system;
  return {
    name: system.name,
    title: manifest.title,
    status: manifest.status as SystemStatus,
    port: manifest.port,
    main: manifest.main,
    mainExists: existsSync(join(system.dir, manifest.main)),
    bench: manifest.bench,
    benchExists: existsSync(join(system.dir, manifest.bench)),
    engines: manifest.engines as EngineKind[],
    /** `casebook <name> <tool>`: the manifest's tools, by name. */
    tools: Object.keys(manifest.tools).sort(),
  };
}
