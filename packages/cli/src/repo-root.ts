/**
 * Where the Casebook repository is: the nearest directory above the CLI whose
 * package.json declares `workspaces`. `CASEBOOK_ROOT` overrides the search, so
 * tests can point the CLI at a directory of fixture systems.
 *
 * @example
 * const root = findRepoRoot(import.meta.dirname, process.env); // "/home/me/casebook"
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { cliErrors } from "./cli-errors.ts";

/** Directory levels walked up before giving up; a repository is never this deep. */
const maxDepth = 64;

export function findRepoRoot(startDir: string, env: NodeJS.ProcessEnv): string {
  const override = env.CASEBOOK_ROOT;
  if (override !== undefined && override !== "") {
    const root = resolve(override);
    if (!existsSync(root) || !statSync(root).isDirectory()) {
      throw cliErrors.create("CLI_ROOT_NOT_FOUND", {
        detail: `CASEBOOK_ROOT=${override} is not a directory.`,
        fields: { root },
      });
    }
    return root;
  }
  let dir = resolve(startDir);
  for (let depth = 0; depth < maxDepth; depth++) {
    if (declaresWorkspaces(join(dir, "package.json"))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw cliErrors.create("CLI_ROOT_NOT_FOUND", { fields: { startDir } });
}

function declaresWorkspaces(file: string): boolean {
  if (!existsSync(file)) return false;
  try {
    const parsed: unknown = JSON.parse(readFileSync(file, "utf8"));
    return typeof parsed === "object" && parsed !== null && "workspaces" in parsed;
  } catch {
    // A broken package.json on the way up is not ours to judge; keep walking.
    return false;
  }
}
