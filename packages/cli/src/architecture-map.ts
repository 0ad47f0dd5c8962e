/**
 * The systems table of `shared/ARCHITECTURE.md` (beside the repository: `<root>/../shared/`),
 * read for what `casebook new` can take from it: each system's folder name, design title
 * and seed, and its row number, which is also its port (8100 + row: rate-limiter is row 1
 * and 8101, webhooks row 13 and 8113). A missing or reshaped file is an empty map: the map
 * only supplies defaults, and `--title` / `--seed` / `--port` say the rest.
 *
 * @example
 * const map = readArchitectureMap("/work/main");
 * map.get("flash-sale"); // { name: "flash-sale", title: "ticket flash sale", seed: "000 §8", row: 8 }
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

export interface MappedSystem {
  name: string;
  title: string;
  seed: string;
  /** 1-based position in the table. */
  row: number;
}

/** `| \`flash-sale\` | ticket flash sale | 000 §8 |` */
const rowPattern = /^\|\s*`([a-z0-9-]+)`\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$/;

/** Where the shared documents are: `../shared` next to the repository (a worktree links it there too). */
export function sharedDir(root: string): string {
  return join(root, "..", "shared");
}

export function readArchitectureMap(root: string): Map<string, MappedSystem> {
  const file = join(sharedDir(root), "ARCHITECTURE.md");
  const map = new Map<string, MappedSystem>();
  if (!existsSync(file)) return map;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = rowPattern.exec(line);
    if (match === null) continue;
    const [, name, title, seed] = match as unknown as [string, string, string, string];
    map.set(name, { name, title, seed, row: map.size + 1 });
  }
  return map;
}

/** `| [\`payments\`](systems/payments/README.md) | payments and double-entry ledger | **working** — … |` */
const readmeRowPattern = /^\|\s*\[?`([a-z0-9-]+)`\]?(?:\([^)]*\))?\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*$/;

/**
 * The systems table of the repository's own README.md (the same rows, in the same order, as
 * the map): what a clone without `../shared` knows of the plan. Seeds are not in it ("").
 */
export function readReadmeSystems(root: string): Map<string, MappedSystem & { status: string }> {
  const file = join(root, "README.md");
  const rows = new Map<string, MappedSystem & { status: string }>();
  if (!existsSync(file)) return rows;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const match = readmeRowPattern.exec(line);
    if (match === null) continue;
    const [, name, title, status] = match as unknown as [string, string, string, string];
    rows.set(name, { name, title, seed: "", row: rows.size + 1, status });
  }
  return rows;
}

/**
 * The designs of the plan that systems/ does not hold yet: planned, not built. From the map
 * (`../shared/ARCHITECTURE.md`) when it is there, else from README.md's systems table. Their
 * port is the one `casebook new` would give them (8100 + row).
 *
 * @example
 * plannedSystems(root, ["payments", "webhooks"]).map((s) => s.name); // ["chat", "feed", …]
 */
export function plannedSystems(root: string, built: readonly string[]): MappedSystem[] {
  const map = readArchitectureMap(root);
  const plan = map.size > 0 ? [...map.values()] : [...readReadmeSystems(root).values()];
  return plan.filter((s) => !built.includes(s.name));
}

/** The port a mapped system gets: 8100 + its row. */
export function mappedPort(system: MappedSystem): number {
  return 8100 + system.row;
}
