/**
 * The repository's import graph, read from source text (no compiler: the whole tree reads in
 * well under a second), and the layering rules of ARCHITECTURE.md's "Dependencies point down"
 * checked against it. The architecture test (`packages/lab/test/architecture.test.ts`) is its
 * user; `casebook` has no command for it.
 *
 * What counts as an import: `import … from "x"`, `export … from "x"`, `import "x"` and
 * `import("x")` with a literal specifier. Comments are stripped first, so an `@example` in a
 * TSDoc block is not an edge. Type-only imports are edges too: a domain file that names a
 * store's type depends on the store as surely as one that calls it.
 *
 * @example
 * const graph = readImportGraph("/work/main");
 * const found = checkLayering(graph); // [{ owner: "systems/cache", rule: "cycle", detail: "…" }]
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

/** One module: its path from the root (`systems/cache/src/main.ts`) and what it imports. */
export interface ModuleNode {
  file: string;
  /** `systems/cache` or `packages/kit`: the workspace the file belongs to. */
  owner: string;
  imports: ImportEdge[];
}

export interface ImportEdge {
  specifier: string;
  /** The file it resolves to, from the root; null for a third-party or node: module. */
  target: string | null;
  typeOnly: boolean;
}

export interface ImportGraph {
  root: string;
  modules: Map<string, ModuleNode>;
  /** Workspace package name → its folder (`@casebook/kit` → `packages/kit`). */
  workspaces: Map<string, string>;
  /** Workspace folder → the packages its manifest's `dependencies` name (what ships with `src/`). */
  dependencies: Map<string, ReadonlySet<string>>;
}

export type LayeringRule =
  | "domain-imports-io"
  | "client-imports-server"
  | "system-imports-system"
  | "package-imports-system"
  | "package-imports-upward"
  | "cycle"
  | "unresolved"
  | "undeclared-dependency";

export interface LayeringViolation {
  owner: string;
  rule: LayeringRule;
  /** Stable text naming the files: `src/domain/x.ts -> src/store/y.ts`, paths from the owner. */
  detail: string;
}

/** The scanned trees: every system's and package's `src/`. */
const sourceRoots = ["systems", "packages"] as const;

/**
 * kit imports nothing of ours, infra only kit (rule 1); lab and cli sit above both; the console
 * reuses cli's discovery of systems and claims (cli starts it as a process, never imports it).
 */
const packageLayers: Record<string, readonly string[]> = {
  "packages/kit": [],
  "packages/infra": ["packages/kit"],
  "packages/lab": ["packages/kit", "packages/infra"],
  "packages/cli": ["packages/kit", "packages/infra", "packages/lab"],
  "packages/console": ["packages/kit", "packages/infra", "packages/cli"],
};

/** The folders a system's domain may not reach into (its own or a feature folder's). */
const ioSlots = new Set(["store", "api", "workers", "clients"]);

/**
 * A system's own client library speaks only the public API (rule 1's one exception), so it
 * may share the domain with the server but not the server's handlers, stores or loops.
 */
const serverSlots = new Set([...ioSlots, "sim", "tools"]);

export function readImportGraph(root: string): ImportGraph {
  const workspaces = readWorkspaces(root);
  const modules = new Map<string, ModuleNode>();
  for (const folder of workspaces.values()) {
    const src = join(root, folder, "src");
    if (!existsSync(src)) continue;
    for (const path of listTypeScript(src)) {
      const file = toPosix(relative(root, path));
      const text = stripComments(readFileSync(path, "utf8"));
      const imports = readSpecifiers(text).map(({ specifier, typeOnly }) => ({
        specifier,
        typeOnly,
        target: resolveSpecifier(root, workspaces, file, specifier),
      }));
      modules.set(file, { file, owner: folder, imports });
    }
  }
  return { root, modules, workspaces, dependencies: readDependencies(root, workspaces) };
}

/** Every rule of "Dependencies point down" the graph breaks, cycles included, sorted. */
export function checkLayering(graph: ImportGraph): LayeringViolation[] {
  const found: LayeringViolation[] = [];
  for (const node of graph.modules.values()) {
    for (const edge of node.imports) found.push(...checkEdge(graph, node, edge));
  }
  for (const cycle of findCycles(graph)) {
    const owner = graph.modules.get(cycle[0]!)!.owner;
    found.push({ owner, rule: "cycle", detail: cycle.map((f) => fromOwner(owner, f)).join(" <-> ") });
  }
  const unique = new Map(found.map((v) => [key(v), v]));
  return [...unique.values()].sort((a, b) => key(a).localeCompare(key(b)));
}

/** `systems/cache cycle: src/a.ts <-> src/b.ts`: one line a violation, the form the test lists. */
export function violationKey(v: LayeringViolation): string {
  return key(v);
}

function key(v: LayeringViolation): string {
  return `${v.owner} ${v.rule}: ${v.detail}`;
}

function checkEdge(graph: ImportGraph, node: ModuleNode, edge: ImportEdge): LayeringViolation[] {
  const { owner } = node;
  const isSystem = owner.startsWith("systems/");
  const spec = edge.specifier;
  const needed = packageOf(spec);
  if (
    needed !== undefined &&
    needed !== ownName(graph, owner) &&
    !graph.dependencies.get(owner)?.has(needed)
  ) {
    // src/ runs in production: a package it imports must be a dependency, not a devDependency
    // (absent from `npm ci --omit=dev`) nor something hoisted from another workspace.
    return [{ owner, rule: "undeclared-dependency", detail: `${fromOwner(owner, node.file)} -> ${needed}` }];
  }
  if (edge.target === null) {
    if (spec.startsWith(".") || spec.startsWith("@casebook/")) {
      return [{ owner, rule: "unresolved", detail: `${fromOwner(owner, node.file)} -> ${spec}` }];
    }
    return [];
  }
  const target = graph.modules.get(edge.target);
  const targetOwner = target?.owner ?? ownerOf(edge.target);
  const arrow = `${fromOwner(owner, node.file)} -> ${targetOwner === owner ? fromOwner(owner, edge.target) : edge.target}`;
  if (targetOwner === owner) {
    if (!isSystem) return [];
    const targetSlot = slotOf(edge.target) ?? "";
    if (inDomain(node.file) && ioSlots.has(targetSlot)) {
      return [{ owner, rule: "domain-imports-io", detail: arrow }];
    }
    if (inClient(node.file) && (serverSlots.has(targetSlot) || isEntry(edge.target))) {
      return [{ owner, rule: "client-imports-server", detail: arrow }];
    }
    return [];
  }
  if (targetOwner.startsWith("systems/")) {
    if (!isSystem) return [{ owner, rule: "package-imports-system", detail: arrow }];
    const clientExport = `@casebook/${targetOwner.slice("systems/".length)}/client`;
    if (spec !== clientExport) return [{ owner, rule: "system-imports-system", detail: arrow }];
    return [];
  }
  if (!isSystem) {
    const allowed = packageLayers[owner] ?? [];
    if (!allowed.includes(targetOwner)) return [{ owner, rule: "package-imports-upward", detail: arrow }];
  } else if (targetOwner === "packages/cli") {
    return [{ owner, rule: "package-imports-upward", detail: arrow }];
  }
  return [];
}

/** `@casebook/infra/http/x` → `@casebook/infra`, `ioredis` → `ioredis`; undefined for node: and relative. */
function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith(".") || specifier.startsWith("node:") || specifier.startsWith("/"))
    return undefined;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

function ownName(graph: ImportGraph, owner: string): string | undefined {
  for (const [name, folder] of graph.workspaces) if (folder === owner) return name;
  return undefined;
}

function readDependencies(root: string, workspaces: Map<string, string>): Map<string, ReadonlySet<string>> {
  const out = new Map<string, ReadonlySet<string>>();
  for (const folder of workspaces.values()) {
    const pkg = JSON.parse(readFileSync(join(root, folder, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    out.set(folder, new Set(Object.keys(pkg.dependencies ?? {})));
  }
  return out;
}

/** `src/domain/x.ts` and `src/cluster/domain/x.ts` are domain files. */
function inDomain(file: string): boolean {
  return file.split("/").slice(3).includes("domain");
}

function inClient(file: string): boolean {
  return file.split("/")[3] === "client";
}

/** `src/main.ts`, `src/cluster-main.ts`: composition roots, which import everything. */
function isEntry(file: string): boolean {
  const parts = file.split("/");
  return parts.length === 4 && /(^|-)main\.ts$/.test(parts[3]!);
}

/** The first slot folder below `src/` (or below a feature folder): `store` for `src/cluster/store/x.ts`. */
function slotOf(file: string): string | null {
  const parts = file.split("/").slice(3, -1);
  return parts.find((p) => serverSlots.has(p) || p === "domain" || p === "client") ?? null;
}

function ownerOf(file: string): string {
  return file.split("/").slice(0, 2).join("/");
}

function fromOwner(owner: string, file: string): string {
  return file.startsWith(`${owner}/`) ? file.slice(owner.length + 1) : file;
}

/**
 * Strongly connected components of more than one file (Tarjan, iterative so a deep chain
 * cannot overflow the stack), each rotated to start at its smallest path.
 */
export function findCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let counter = 0;
  const successors = (file: string): string[] =>
    (graph.modules.get(file)?.imports ?? [])
      .map((e) => e.target)
      .filter((t): t is string => t !== null && t !== file && graph.modules.has(t));
  for (const start of [...graph.modules.keys()].sort()) {
    if (index.has(start)) continue;
    const work: Array<{ file: string; next: string[] }> = [];
    const visit = (file: string): void => {
      index.set(file, counter);
      low.set(file, counter);
      counter += 1;
      stack.push(file);
      onStack.add(file);
      work.push({ file, next: successors(file) });
    };
    visit(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const child = frame.next.shift();
      if (child !== undefined) {
        if (!index.has(child)) visit(child);
        else if (onStack.has(child)) low.set(frame.file, Math.min(low.get(frame.file)!, index.get(child)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.file, Math.min(low.get(parent.file)!, low.get(frame.file)!));
      if (low.get(frame.file) !== index.get(frame.file)) continue;
      const component: string[] = [];
      for (;;) {
        const member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
        if (member === frame.file) break;
      }
      if (component.length > 1) cycles.push(component.sort());
    }
  }
  return cycles.sort((a, b) => a[0]!.localeCompare(b[0]!));
}

/** Workspace package name → its folder, for `systems/*` and `packages/*`. */
export function readWorkspaces(root: string): Map<string, string> {
  const workspaces = new Map<string, string>();
  for (const tree of sourceRoots) {
    const dir = join(root, tree);
    if (!existsSync(dir)) continue;
    for (const name of readdirSync(dir).sort()) {
      const manifest = join(dir, name, "package.json");
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string };
      if (typeof pkg.name === "string") workspaces.set(pkg.name, `${tree}/${name}`);
    }
  }
  return workspaces;
}

function listTypeScript(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listTypeScript(path));
    else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

/**
 * Block comments out, then line comments that start a line or follow whitespace (so the `//`
 * of `http://` inside a string stays). Strings that hold `/*` are rare enough in this tree
 * that the architecture test would show one as an unresolved import, not hide an edge.
 */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
}

const staticImport = /^\s*(import|export)\s+(type\s+)?(?:[^;"'`]*?\s+from\s*)?["']([^"']+)["']/gm;
const dynamicImport = /\bimport\(\s*["']([^"']+)["']\s*\)/g;

function readSpecifiers(text: string): Array<{ specifier: string; typeOnly: boolean }> {
  const out: Array<{ specifier: string; typeOnly: boolean }> = [];
  for (const m of text.matchAll(staticImport)) out.push({ specifier: m[3]!, typeOnly: m[2] !== undefined });
  for (const m of text.matchAll(dynamicImport)) out.push({ specifier: m[1]!, typeOnly: false });
  return out;
}

function resolveSpecifier(
  root: string,
  workspaces: Map<string, string>,
  from: string,
  specifier: string,
): string | null {
  let base: string;
  if (specifier.startsWith(".")) {
    base = resolve(root, dirname(from), specifier);
  } else if (specifier.startsWith("@casebook/")) {
    const [scope, name, ...rest] = specifier.split("/");
    const folder = workspaces.get(`${scope}/${name}`);
    if (folder === undefined || rest.length === 0) return null;
    base = join(root, folder, "src", rest.join("/"));
  } else {
    return null;
  }
  for (const candidate of [base, `${base}.ts`, base.replace(/\.js$/, ".ts"), join(base, "index.ts")]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return toPosix(relative(root, candidate));
  }
  return null;
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}
