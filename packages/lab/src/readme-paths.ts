/**
 * Every backticked path in the repository's READMEs, resolved against the tree: a design
 * table that names a file which moved is a broken map (issue 13 found two in webhooks'). The
 * README test (`packages/lab/test/readme-paths.test.ts`) is its user.
 *
 * What counts as a path: a backticked token without spaces that starts with a slot folder
 * (`src/`, `test/`, `bench/`, `systems/`, `packages/`, `docs/`, `.ci/`), names a workspace
 * module (`@casebook/kit/api-key`), or ends with a source extension (`fan-out.ts`,
 * `001_tenants.sql`). Globs and elisions (`src/api/*`, `001…004_*.sql`, `…/outbox-relay`)
 * are patterns, not paths, and are skipped; so is `../shared/…`, which lives beside the
 * checkout; so are placeholders (`NNN_name.sql`) and bare extensions (`.lua`). A bare name or a
 * partial path (`tenant-claimer.ts`, `http/outbound.ts`) resolves when some file under the
 * README's folder or under `packages/` ends with it; in a package's README or the top one, a
 * file of any system will do (they describe "a system's `src/clients/`").
 *
 * @example
 * const broken = brokenReadmePaths("/work/main"); // [{ readme: "systems/webhooks/README.md", path: "src/x.ts", line: 193 }]
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { readWorkspaces } from "./import-graph.ts";

export interface BrokenPath {
  /** The README, from the root. */
  readme: string;
  path: string;
  line: number;
}

const pathPrefixes = ["src/", "test/", "bench/", "systems/", "packages/", "docs/", ".ci/"];
const extensions = /\.(ts|js|mjs|md|lua|sql|json|proto|sh|ya?ml|toml|csv|txt|html|css)$/;
const skippedFolders = new Set(["node_modules", ".git", "data", ".casebook"]);

/** The READMEs the test reads: the top one, and each system's and package's. */
export function listReadmes(root: string): string[] {
  const out: string[] = [];
  if (existsSync(join(root, "README.md"))) out.push("README.md");
  for (const tree of ["systems", "packages"]) {
    const dir = join(root, tree);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      if (existsSync(join(dir, name, "README.md"))) out.push(`${tree}/${name}/README.md`);
    }
  }
  return out;
}

/** A backticked token the test should resolve, or null when it is prose, a pattern or a URL. */
export function pathToken(token: string): string | null {
  if (/[\s*…<>{}$|,;=]/.test(token) || token.includes("://")) return null;
  // The shared docs live beside the checkout (`../shared`), not in it.
  if (token.startsWith("../shared") || token.startsWith("shared/")) return null;
  // An extension or a suffix talked about (`.lua`, `-n.lua`), or a placeholder (`NNN_name.sql`).
  if (/^[.-][\w.-]*$/.test(token) || /(^|\/)(NNN|name)[._]/.test(token)) return null;
  const path = token.replace(/:\d+(-\d+)?$/, "").replace(/#.*$/, "");
  if (path.startsWith("@casebook/")) return path;
  if (pathPrefixes.some((p) => path.startsWith(p))) return path;
  if (extensions.test(path) && /^[\w./@-]+$/.test(path) && !path.startsWith("/")) return path;
  return null;
}

export function brokenReadmePaths(root: string): BrokenPath[] {
  const broken: BrokenPath[] = [];
  const packageFiles = listFiles(root, "packages");
  const everyFile = listFiles(root, ".");
  const workspaces = readWorkspaces(root);
  for (const readme of listReadmes(root)) {
    const folder = dirname(readme);
    const localFiles = folder.startsWith("systems/") ? listFiles(root, folder) : everyFile;
    const lines = readFileSync(join(root, readme), "utf8").split("\n");
    let fenced = false;
    lines.forEach((text, i) => {
      if (text.trimStart().startsWith("```")) fenced = !fenced;
      if (fenced) return;
      for (const m of text.matchAll(/`([^`\n]+)`/g)) {
        const path = pathToken(m[1]!);
        if (path === null) continue;
        if (!resolves(root, folder, path, localFiles, packageFiles, workspaces)) {
          broken.push({ readme, path, line: i + 1 });
        }
      }
    });
  }
  return broken;
}

function resolves(
  root: string,
  folder: string,
  path: string,
  localFiles: readonly string[],
  packageFiles: readonly string[],
  workspaces: Map<string, string>,
): boolean {
  const bare = path.replace(/\/$/, "");
  if (bare.startsWith("@casebook/")) {
    const [scope, name, ...rest] = bare.split("/");
    const ws = workspaces.get(`${scope}/${name}`);
    if (ws === undefined) return false;
    if (rest.length === 0) return true;
    const base = join(root, ws, "src", rest.join("/"));
    return [base, `${base}.ts`, join(base, "index.ts")].some((p) => existsSync(p));
  }
  if (existsSync(join(root, folder, bare)) || existsSync(join(root, bare))) return true;
  const suffix = `/${bare}`;
  return localFiles.some((f) => f.endsWith(suffix)) || packageFiles.some((f) => f.endsWith(suffix));
}

/** Every file and folder under `dir` (from the root, with a leading `/` for suffix matching). */
function listFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string): void => {
    for (const entry of readdirSync(abs, { withFileTypes: true })) {
      if (skippedFolders.has(entry.name)) continue;
      const path = join(abs, entry.name);
      out.push(`/${toPosix(relative(root, path))}`);
      if (entry.isDirectory()) walk(path);
    }
  };
  walk(join(root, dir));
  return out;
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}
