/**
 * `casebook up [name…]` and `casebook run <name> [-- args]`: the same launch
 * (plan, check ports, supervise), differing in how many systems they take, how
 * the port is overridden and whether arguments pass through to the child.
 *
 * @example
 * process.exitCode = await upCommand(["rate-limiter", "--port", "rate-limiter=8150"], io);
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { plannedSystems } from "./architecture-map.ts";
import { wireCalls } from "./call-plan.ts";
import { cliErrors } from "./cli-errors.ts";
import type { CliIo } from "./cli-io.ts";
import { parseCommandArgs, parseCount, passUnknownAfterName } from "./command-args.ts";
import { noSystemMessage } from "./command-list.ts";
import { consoleName, consolePlan } from "./console-plan.ts";
import { didYouMean } from "./did-you-mean.ts";
import { discoverSystems, findSystem, type SystemInfo } from "./discover-systems.ts";
import { pathInDataRoot, runForeground } from "./foreground.ts";
import { helpText } from "./help.ts";
import { parsePort, planLaunch } from "./launch-plan.ts";
import { assertPortsFree } from "./port-check.ts";
import { findRepoRoot } from "./repo-root.ts";
import { wireScrapes } from "./scrape-plan.ts";
import { defaultSuperviseLimits, exitCodeFor, supervise } from "./supervisor.ts";
import { keptWiringKeys } from "./wiring-keys.ts";

const sharedOptions = {
  host: { type: "string" },
  "health-timeout-ms": { type: "string" },
  "stop-timeout-ms": { type: "string" },
  logs: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

type SharedValues = { [K in keyof typeof sharedOptions]?: K extends "help" ? boolean : string };

interface Launch {
  mode: "up" | "run";
  names: string[];
  /** Raw `name=port` or, for run, `port` strings, checked once the systems are known. */
  portFlags: string[];
  args: string[];
  values: SharedValues;
  /** `up` starts the web console first (packages/console), unless --no-console. */
  withConsole?: boolean;
}

export async function upCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals, passThrough } = parseCommandArgs("up", argv, {
    ...sharedOptions,
    port: { type: "string", multiple: true },
    "no-console": { type: "boolean" },
  });
  if (values.help) {
    io.out(helpText("up"));
    return 0;
  }
  if (passThrough.length > 0) {
    throw cliErrors.create("CLI_USAGE", {
      detail: "`casebook up` passes no arguments to the systems.",
      fields: { hint: "Use `casebook run <name> -- <args>` for one system with arguments." },
    });
  }
  const withConsole = values["no-console"] !== true;
  return launch(
    { mode: "up", names: positionals, portFlags: values.port ?? [], args: [], values, withConsole },
    io,
  );
}

const runOptions = { ...sharedOptions, port: { type: "string" } } as const;

export async function runCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals, passThrough } = parseCommandArgs(
    "run",
    passUnknownAfterName(argv, runOptions),
    runOptions,
  );
  const wantsHelp = values.help === true || passThrough.some((a) => a === "--help" || a === "-h");
  if (wantsHelp && positionals.length === 1) return systemHelp(positionals[0]!, io);
  if (values.help) {
    io.out(helpText("run"));
    return 0;
  }
  if (positionals.length !== 1) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `\`casebook run\` takes exactly one system name (got ${positionals.length}).`,
      fields: { hint: "Example: `casebook run rate-limiter`; for several, `casebook up a b`." },
    });
  }
  const portFlags = values.port === undefined ? [] : [`${positionals[0]}=${values.port}`];
  return launch(
    { mode: "run", names: positionals, portFlags, args: passThrough, values, withConsole: false },
    io,
  );
}

async function launch(request: Launch, io: CliIo): Promise<number> {
  const limits = {
    ...defaultSuperviseLimits,
    healthTimeoutMs: parseCount(
      request.values["health-timeout-ms"],
      "--health-timeout-ms",
      defaultSuperviseLimits.healthTimeoutMs,
    ),
    stopTimeoutMs: parseCount(
      request.values["stop-timeout-ms"],
      "--stop-timeout-ms",
      defaultSuperviseLimits.stopTimeoutMs,
    ),
  };
  const logStyle = chooseLogStyle(request.values.logs, io);
  const portOverrides = parsePortFlags(request.portFlags);
  const root = findRepoRoot(io.cliDir, io.env);
  const systems = discoverSystems(root);
  if (systems.length === 0 && request.names.length === 0) {
    io.out(noSystemMessage(root));
    return 0;
  }
  assertKnownNames(portOverrides, systems, request.withConsole === true);
  assertBuilt(request.names, systems, root);
  const honourPortEnv = request.mode === "run";
  const selection = planLaunch(systems, {
    root,
    names: request.names,
    host: request.values.host ?? (io.env.CASEBOOK_HOST || "127.0.0.1"),
    portOverrides,
    honourPortEnv,
    args: request.args,
    env: io.env,
  });
  for (const { name, reason } of selection.skipped) io.err(`casebook: skipping ${name} (${reason})\n`);
  if (selection.plans.length === 0) {
    io.out(
      `No system is built yet: ${selection.skipped.length} found in systems/, none with status "working" or\n` +
        '"in progress" and its main.ts written. `casebook list` shows where each one stands.\n',
    );
    return 0;
  }
  const consoleChild = request.withConsole
    ? consolePlan(selection.plans, { root, host: selection.plans[0]!.host, portOverrides, env: io.env })
    : undefined;
  // First: `casebook up` prints the console's address before any system's.
  if (consoleChild !== undefined) selection.plans.unshift(consoleChild);
  // Issue 22: metrics (the system declaring `scrapes`) scrapes every service of this launch.
  // The keys both mint are kept in the data root, the same launch after launch (wiring-keys.ts).
  const keys = keptWiringKeys(pathInDataRoot(root, io.env, "wiring-keys.json"), randomBytes);
  if (request.mode === "up") wireScrapes(selection.plans, { env: io.env, keys });
  // Issue 17: a system that calls another (flash-sale → payments) is given its URL and a granted key.
  if (request.mode === "up") wireCalls(selection.plans, { env: io.env, keys });
  await assertPortsFree(selection.plans, honourPortEnv);
  return supervise(selection.plans, { ...limits, mode: request.mode, logStyle, out: io.out, err: io.err });
}

/** `--port name=port` flags, checked for form before anything is read from disk. */
function parsePortFlags(flags: readonly string[]): Map<string, number> {
  const ports = new Map<string, number>();
  for (const flag of flags) {
    const match = /^([^=]+)=(.*)$/.exec(flag);
    if (match === null) {
      throw cliErrors.create("CLI_USAGE", {
        detail: `--port ${flag} names no system.`,
        fields: { hint: "Write --port <name>=<port>, e.g. --port rate-limiter=8150." },
      });
    }
    const [, name, value] = match as unknown as [string, string, string];
    ports.set(name, parsePort(value, `--port ${name}`));
  }
  return ports;
}

/**
 * `casebook run <name> --help` and `casebook help <name>`: the system's own `--help` (what it
 * is, every setting it reads), run in the foreground — no port check, no health wait, so
 * neither a taken port nor the entry's prompt exit reads as a failed start.
 */
export async function systemHelp(name: string, io: CliIo): Promise<number> {
  const root = findRepoRoot(io.cliDir, io.env);
  const systems = discoverSystems(root);
  assertBuilt([name], systems, root);
  const system = findSystem(systems, name);
  const entry = join(system.dir, system.manifest.main);
  if (!existsSync(entry)) {
    throw cliErrors.create("CLI_ENTRY_MISSING", {
      detail: `${name} (${system.manifest.status}) has no ${system.manifest.main} yet (casebook.main in ${system.file}).`,
      fields: { entry },
    });
  }
  const info = await runForeground(system, entry, ["--help"], pathInDataRoot(root, io.env, system.name), io);
  if (info.error) io.err(`casebook: could not run ${name} --help: ${info.error.message}\n`);
  return exitCodeFor(info);
}

/** A name that is a planned design (on the map, or a manifest with status "planned"): say so, not "unknown". */
function assertBuilt(names: readonly string[], systems: readonly SystemInfo[], root: string): void {
  for (const name of names) {
    const found = systems.find((s) => s.name === name);
    const mapped = found === undefined ? plannedSystems(root, []).find((s) => s.name === name) : undefined;
    if (found?.manifest.status !== "planned" && mapped === undefined) continue;
    const title = found?.manifest.title ?? mapped?.title;
    throw cliErrors.create("CLI_SYSTEM_PLANNED", {
      detail: `${name} (${title}) is planned, not built yet.`,
      fields: { hint: "`casebook list` shows the systems that run; `casebook up` starts them all." },
    });
  }
}

function assertKnownNames(
  ports: ReadonlyMap<string, number>,
  systems: readonly SystemInfo[],
  withConsole: boolean,
): void {
  for (const name of ports.keys()) {
    if (systems.some((s) => s.name === name) || (withConsole && name === consoleName)) continue;
    const guess = didYouMean(
      name,
      systems.map((s) => s.name),
    );
    throw cliErrors.create("CLI_SYSTEM_UNKNOWN", {
      detail: `--port ${name}=…: no system named '${name}'.`,
      fields: { hint: guess ? `Did you mean '${guess}'?` : "Run `casebook list`." },
    });
  }
}

function chooseLogStyle(mode: string | undefined, io: CliIo): { pretty: boolean; color: boolean } {
  const modes = ["auto", "pretty", "raw"];
  if (mode !== undefined && !modes.includes(mode)) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `--logs ${mode} is not a log mode.`,
      fields: { hint: `Use one of: ${modes.join(", ")}.` },
    });
  }
  const pretty = mode === "pretty" || ((mode ?? "auto") === "auto" && io.stdoutIsTty);
  const color = pretty && io.stdoutIsTty && (io.env.NO_COLOR ?? "") === "";
  return { pretty, color };
}
