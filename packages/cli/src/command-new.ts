/**
 * `casebook new <name>`: lays down a new system on the map of `shared/ARCHITECTURE.md` —
 * its manifest on a free port, the README in the house order with a row per claim of
 * `shared/claims/<name>.md`, the `src/` slots that have a first real file, a test that
 * starts it, and a bench printing the house rows. Title, seed and port come from the
 * map's systems table when the name is there (port 8100 + its row), else from the flags.
 * Nothing is written unless every check passes; `--dry-run` lists the files instead.
 *
 * @example
 * process.exitCode = await newCommand(["flash-sale", "--dry-run"], io);
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { readArchitectureMap } from "./architecture-map.ts";
import { readClaims } from "./claims-file.ts";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { parseCommandArgs } from "./command-args.ts";
import { discoverSystems, type SystemInfo } from "./discover-systems.ts";
import { commandNames, helpText } from "./help.ts";
import { httpPortMax, httpPortMin } from "./manifest.ts";
import { findRepoRoot } from "./repo-root.ts";
import { renderSystem, type SystemValues } from "./system-template.ts";
import { markInProgress } from "./systems-table-row.ts";

/** kebab-case, as every file and folder of the house: `url-shortener`. */
const namePattern = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;
const nameLengthMax = 40;
/** A title goes into TypeScript strings and comments as it is: no quotes, escapes or comment ends. */
const titlePattern = /^[^"`\\$|*\n\r\t]{1,100}$/;
const seedPattern = /^[0-9A-Za-z §.,-]{1,20}$/;

const options = {
  title: { type: "string" },
  seed: { type: "string" },
  port: { type: "string" },
  "dry-run": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

export async function newCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals, passThrough } = parseCommandArgs("new", argv, options);
  if (values.help) {
    io.out(helpText("new"));
    return 0;
  }
  const name = checkName([...positionals, ...passThrough]);
  const root = findRepoRoot(io.cliDir, io.env);
  const dir = join(root, "systems", name);
  if (existsSync(dir)) {
    throw cliErrors.create("CLI_SYSTEM_EXISTS", {
      detail: `systems/${name} exists already; \`casebook new\` never writes over a system.`,
      fields: { hint: "Pick another name, or remove the folder first if it is yours to remove.", dir },
    });
  }
  const systems = discoverSystems(root);
  const mapped = readArchitectureMap(root).get(name);
  const title = checkText(values.title ?? mapped?.title, "--title", titlePattern, name);
  const rawSeed = values.seed ?? mapped?.seed;
  const seed = rawSeed === undefined ? undefined : checkText(rawSeed, "--seed", seedPattern, name);
  const port = choosePort(values.port, mapped?.row, systems);
  const { file: claimsFile, claims } = readClaims(root, name);
  const system: SystemValues = { name, title, seed, port, claims };
  const files = renderSystem(system);
  const summary = `${name} — ${title}${seed === undefined ? "" : ` (seed ${seed})`}, port ${port}; ${
    claims === undefined ? `no claims file (${claimsFile})` : `${claims.length} claims`
  }`;
  const readmePath = join(root, "README.md");
  const readme = existsSync(readmePath) ? readFileSync(readmePath, "utf8") : undefined;
  const marked = readme === undefined ? undefined : markInProgress(readme, name);
  const rowNote =
    marked === undefined ? undefined : `README.md: its row in the systems table, planned → in progress`;
  if (values["dry-run"]) {
    io.out(`Would write ${files.length} files (${summary}):\n`);
    for (const f of files) io.out(`  systems/${name}/${f.path}\n`);
    if (rowNote !== undefined) io.out(`and change ${rowNote}\n`);
    return 0;
  }
  writeSystem(dir, files);
  io.out(`Wrote ${files.length} files to systems/${name}/ (${summary}):\n`);
  for (const f of files) io.out(`  ${f.path}\n`);
  if (marked !== undefined) {
    writeFileSync(readmePath, marked);
    io.out(`Changed ${rowNote}.\n`);
  }
  io.out(nextSteps(name, port, marked !== undefined));
  return 0;
}

function checkName(names: readonly string[]): string {
  if (names.length !== 1) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `\`casebook new\` takes exactly one system name (got ${names.length}).`,
      fields: { hint: "For example: `casebook new url-shortener`. See `casebook new --help`." },
    });
  }
  const name = names[0]!;
  if (!namePattern.test(name) || name.length > nameLengthMax) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `'${name}' is not a system name: lowercase kebab-case, at most ${nameLengthMax} characters.`,
      fields: { hint: `For example: \`casebook new ${suggestName(name)}\`.` },
    });
  }
  if ((commandNames as readonly string[]).includes(name)) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `'${name}' is a casebook command; \`casebook ${name}\` could never reach the system's tools.`,
      fields: { hint: "Pick another name." },
    });
  }
  return name;
}

function suggestName(name: string): string {
  const kebab = name
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .replace(/^[0-9-]+/, "");
  return kebab === "" ? "url-shortener" : kebab.slice(0, nameLengthMax);
}

function checkText(value: string | undefined, flag: string, pattern: RegExp, name: string): string {
  if (value === undefined) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `${name} is not in the systems table of shared/ARCHITECTURE.md, so ${flag} is needed.`,
      fields: {
        hint: `For example: \`casebook new ${name} --title "global URL shortener" --seed "000 §9"\`.`,
      },
    });
  }
  const text = value.trim();
  if (!pattern.test(text)) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `${flag} ${JSON.stringify(value)} is not valid: plain text, no quotes, backslashes, $, | or *.`,
      fields: { hint: `For example: ${flag} "ticket flash sale".` },
    });
  }
  return text;
}

/** `--port`, else 8100 + the map's row when free, else the lowest port no manifest holds. */
function choosePort(
  raw: string | undefined,
  row: number | undefined,
  systems: readonly SystemInfo[],
): number {
  const holders = new Map(systems.map((s) => [s.manifest.port, s.name]));
  const firstFree = () => {
    for (let port = httpPortMin; port <= httpPortMax; port++) if (!holders.has(port)) return port;
    return undefined;
  };
  if (raw !== undefined) {
    const port = Number(raw);
    if (!/^\d+$/.test(raw) || port < httpPortMin || port > httpPortMax) {
      throw cliErrors.create("CLI_USAGE", {
        detail: `--port ${raw} is not valid: HTTP services take a port in ${httpPortMin}–${httpPortMax}.`,
        fields: { hint: `For example: --port ${firstFree() ?? httpPortMin}` },
      });
    }
    const holder = holders.get(port);
    if (holder !== undefined) throw portClaimed(port, holder, firstFree());
    return port;
  }
  const mappedPort = row === undefined ? undefined : httpPortMin + row;
  if (mappedPort !== undefined && mappedPort <= httpPortMax && !holders.has(mappedPort)) return mappedPort;
  const free = firstFree();
  if (free === undefined) throw portClaimed(httpPortMax, holders.get(httpPortMax)!, undefined);
  return free;
}

function portClaimed(port: number, holder: string, free: number | undefined) {
  return cliErrors.create("CLI_PORT_CLAIMED", {
    detail: `port ${port} is ${holder}'s (casebook.port in systems/${holder}/package.json).`,
    fields: {
      port,
      holder,
      hint:
        free === undefined ? `Every port in ${httpPortMin}–${httpPortMax} is taken.` : `Try --port ${free}.`,
    },
  });
}

/** Writes every file; a failure part way removes the folder again (it did not exist before). */
function writeSystem(dir: string, files: readonly { path: string; text: string }[]): void {
  mkdirSync(dir, { recursive: true });
  try {
    for (const f of files) {
      const path = join(dir, f.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, f.text, { flag: "wx" });
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

function nextSteps(name: string, port: number, rowMarked: boolean): string {
  const row = rowMarked ? "" : "\n  add its row to the systems table of README.md (status: in progress)";
  return `
Next steps
  npm install                          # links @casebook/${name} into the workspace and package-lock.json
  npx casebook run ${name}${" ".repeat(Math.max(1, 20 - name.length))}# then curl -s localhost:${port}/healthz
  node --test systems/${name}/test/*.test.ts   # its tests (npm test runs every system's)
  npx casebook bench ${name} --json     # the template's placeholder bench${row}
Then: the mechanism in src/domain/, its claims' tests, and the README as it grows.
`;
}
