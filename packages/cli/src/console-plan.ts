/**
 * The web console in `casebook up`: started first, on 127.0.0.1:8100, and told where every
 * other system of this launch listens (CASEBOOK_CONSOLE_SYSTEMS). It is a package
 * (`packages/console`), not a system: the CLI starts its entry as a child like a system's,
 * and never imports it. Its port moves like a system's (`--port console=8150`,
 * CASEBOOK_PORT_CONSOLE); `--no-console` leaves it out. It stays on loopback unless
 * CASEBOOK_CONSOLE_ADMIN_TOKEN is set, since its buttons will be destructive.
 *
 * @example
 * const plan = consolePlan(selection.plans, { root, host: "127.0.0.1", portOverrides, env });
 * if (plan) selection.plans.unshift(plan);
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathInDataRoot } from "./foreground.ts";
import { parsePort, portEnvName, type SystemPlan, urlFor } from "./launch-plan.ts";

export const consoleName = "console";
export const consoleDefaultPort = 8100;

export interface ConsolePlanOptions {
  root: string;
  host: string;
  portOverrides: ReadonlyMap<string, number>;
  env: NodeJS.ProcessEnv;
}

/** The console's plan, or undefined when this repository has no console package. */
export function consolePlan(
  systems: readonly SystemPlan[],
  options: ConsolePlanOptions,
): SystemPlan | undefined {
  const dir = join(options.root, "packages", consoleName);
  const entry = join(dir, "src", "main.ts");
  if (!existsSync(entry)) return undefined;
  const variable = portEnvName(consoleName);
  const fromEnv = options.env[variable];
  const port =
    options.portOverrides.get(consoleName) ??
    (fromEnv !== undefined && fromEnv !== "" ? parsePort(fromEnv, variable) : consoleDefaultPort);
  const tokenSet = (options.env.CASEBOOK_CONSOLE_ADMIN_TOKEN ?? "") !== "";
  const host = tokenSet ? options.host : "127.0.0.1";
  const dataDir = pathInDataRoot(options.root, options.env, consoleName);
  const started = systems.map((plan) => ({ name: plan.name, url: plan.url }));
  return {
    name: consoleName,
    title: "web console: every system's state, live plots, claims",
    dir,
    entry,
    args: [],
    host,
    port,
    url: urlFor(host, port),
    engine: "own memory",
    dataDir,
    env: {
      ...options.env,
      PORT: String(port),
      HOST: host,
      CASEBOOK_DATA: dataDir,
      CASEBOOK_CONSOLE_SYSTEMS: JSON.stringify(started),
    },
  };
}
