/**
 * The template of a new system: the files under `packages/cli/templates/system/`, each
 * written to `systems/<name>/` at the same path with its `{{placeholder}}`s filled in, plus
 * the package.json, built here because its manifest is data (a port, the dependency
 * ranges infra already pins). Placeholders stand only inside strings, comments and
 * markdown, so the template files are valid TypeScript that biome checks with the rest of
 * the repository; a placeholder without a value is a bug and throws.
 *
 * @example
 * const files = renderSystem({ name: "flash-sale", title: "ticket flash sale", seed: "000 §8", port: 8108, claims: [] });
 * files.map((f) => f.path); // ["README.md", "bench/main.ts", …, "package.json"]
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { Claim } from "./claims-file.ts";

export const templateDir = join(import.meta.dirname, "..", "templates", "system");

export interface SystemValues {
  /** kebab-case folder and package name: `flash-sale`. */
  name: string;
  title: string;
  /** `000 §8`; undefined: the title line names no seed. */
  seed: string | undefined;
  port: number;
  /** The claims of `shared/claims/<name>.md`; undefined when there is no such file. */
  claims: Claim[] | undefined;
}

export interface RenderedFile {
  /** Relative to the system folder, `/`-separated. */
  path: string;
  text: string;
}

/** Bound on the template's size: it is a handful of files, never a tree to crawl. */
const maxTemplateFiles = 64;

function templateFiles(): string[] {
  const files = readdirSync(templateDir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(templateDir, join(entry.parentPath, entry.name)).split(sep).join("/"))
    .sort();
  if (files.length > maxTemplateFiles) {
    throw new Error(`the system template has ${files.length} files, more than ${maxTemplateFiles}`);
  }
  return files;
}

function claimRows(name: string, claims: Claim[] | undefined): string {
  if (claims === undefined) return `| — | no \`shared/claims/${name}.md\` yet | — | — |`;
  if (claims.length === 0) return `| — | \`shared/claims/${name}.md\` lists no claim | — | — |`;
  return claims.map((c) => `| ${c.id} | ${c.text.replaceAll("|", "\\|")} | — | not yet |`).join("\n");
}

export function placeholdersOf(values: SystemValues): Record<string, string> {
  return {
    name: values.name,
    title: values.title,
    seedParen: values.seed === undefined ? "" : ` (seed ${values.seed})`,
    port: String(values.port),
    snake: values.name.replaceAll("-", "_"),
    envPrefix: values.name.replaceAll("-", "_").toUpperCase(),
    claimRows: claimRows(values.name, values.claims),
  };
}

export function fillPlaceholders(text: string, placeholders: Record<string, string>, file: string): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_whole, key: string) => {
    const value = placeholders[key];
    if (value === undefined) throw new Error(`template ${file}: no value for {{${key}}}`);
    return value;
  });
}

/** Dependency ranges as infra pins them, so the new system never asks npm for a second copy. */
function infraRange(dependency: string, fallback: string): string {
  try {
    const pkg = JSON.parse(
      readFileSync(join(import.meta.dirname, "..", "..", "infra", "package.json"), "utf8"),
    );
    const range = (pkg as { dependencies?: Record<string, string> }).dependencies?.[dependency];
    return typeof range === "string" ? range : fallback;
  } catch {
    return fallback;
  }
}

export function packageJsonOf(values: SystemValues): string {
  const pkg = {
    name: `@casebook/${values.name}`,
    version: "0.1.0",
    private: true,
    type: "module",
    exports: { "./package.json": "./package.json" }, // a client library adds "./client" (ARCHITECTURE: src/client/)
    casebook: {
      title: values.title,
      status: "in progress",
      main: "src/main.ts",
      bench: "bench/main.ts",
      port: values.port,
      // Honest until a store arrives: the "engine" column of `casebook up` says "none".
      engines: [],
    },
    dependencies: {
      "@casebook/infra": "*",
      "@casebook/kit": "*",
      fastify: infraRange("fastify", "^5.12.8"),
      "prom-client": infraRange("prom-client", "^15.1.3"),
    },
    devDependencies: { "@casebook/lab": "*" },
  };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** Every file of the new system, in path order, package.json last. */
export function renderSystem(values: SystemValues): RenderedFile[] {
  const placeholders = placeholdersOf(values);
  const files = templateFiles().map((path) => ({
    path,
    text: fillPlaceholders(readFileSync(join(templateDir, path), "utf8"), placeholders, path),
  }));
  return [...files, { path: "package.json", text: packageJsonOf(values) }];
}
