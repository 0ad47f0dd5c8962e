/**
 * The systems the console shows, found as the CLI finds them (`discoverSystems`, the claims
 * files, the architecture map): each with its manifest's title, where it listens, what it
 * declared for the console, its claims and its design text's section. Where each system runs
 * comes from `casebook up` (CASEBOOK_CONSOLE_SYSTEMS, the URLs it started them on); without
 * it, every built system at its manifest's port on loopback.
 *
 * @example
 * const catalog = readCatalog({ root, started: parseStarted(env.CASEBOOK_CONSOLE_SYSTEMS) });
 * catalog.systems.map((s) => `${s.name} ${s.url}`); // ["cache http://127.0.0.1:8114", …]
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readArchitectureMap } from "@casebook/cli/architecture-map";
import { type Claim, readClaims } from "@casebook/cli/claims-file";
import { discoverSystems } from "@casebook/cli/discover-systems";
import {
  type ConsoleDeclaration,
  type PortDeclaration,
  parseConsoleDeclaration,
} from "./console-declaration.ts";
import { consoleErrors } from "./console-errors.ts";

export interface StartedSystem {
  name: string;
  url: string;
}

export interface CatalogSystem {
  name: string;
  title: string;
  /** The manifest's status: working, in progress, planned. */
  status: string;
  /** Its HTTP base URL. */
  url: string;
  /** HTTP first, then the ports it declared (RESP). */
  ports: PortDeclaration[];
  /** Started by the `casebook up` that started this console (always true without that list). */
  started: boolean;
  /** Its seed reference from the architecture map ("000 §1", "003"), when mapped. */
  seed: string | undefined;
  /** README.md's absolute path, when it has one. */
  readme: string | undefined;
  declaration: ConsoleDeclaration | undefined;
  claims: Claim[];
}

export interface Catalog {
  systems: CatalogSystem[];
  /** Manifest problems of console blocks: shown, not fatal (one bad block must not hide the rest). */
  problems: string[];
}

/** CASEBOOK_CONSOLE_SYSTEMS: `[{"name":"rate-limiter","url":"http://127.0.0.1:8101"}, …]`. */
export function parseStarted(text: string | undefined): StartedSystem[] | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw consoleErrors.create("CONSOLE_SYSTEMS_INVALID", { detail: (error as Error).message });
  }
  const ok =
    Array.isArray(parsed) &&
    parsed.every(
      (s) => typeof s?.name === "string" && typeof s?.url === "string" && /^https?:\/\//.test(s.url),
    );
  if (!ok) {
    throw consoleErrors.create("CONSOLE_SYSTEMS_INVALID", {
      detail: 'expected a JSON list like [{"name":"rate-limiter","url":"http://127.0.0.1:8101"}]',
    });
  }
  return parsed as StartedSystem[];
}

export function readCatalog(options: { root: string; started: StartedSystem[] | undefined }): Catalog {
  const map = readArchitectureMap(options.root);
  const problems: string[] = [];
  const systems = discoverSystems(options.root)
    .filter((s) => s.manifest.status !== "planned")
    .map((system): CatalogSystem => {
      const startedAs = options.started?.find((s) => s.name === system.name);
      const url = startedAs?.url ?? `http://127.0.0.1:${system.manifest.port}`;
      const result = parseConsoleDeclaration(system.manifest.console, system.file);
      problems.push(...result.problems);
      const httpPort = Number(new URL(url).port) || system.manifest.port;
      const readme = join(system.dir, "README.md");
      return {
        name: system.name,
        title: system.manifest.title,
        status: system.manifest.status,
        url,
        ports: [{ name: "HTTP", port: httpPort }, ...(result.declaration?.ports ?? [])],
        started: options.started === undefined || startedAs !== undefined,
        seed: map.get(system.name)?.seed,
        readme: existsSync(readme) ? readme : undefined,
        declaration: result.declaration,
        claims: readClaims(options.root, system.name).claims ?? [],
      };
    });
  return { systems, problems };
}
