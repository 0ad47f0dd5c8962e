/**
 * Lua includes (BullMQ's `src/commands/includes/`): scripts of one system that open
 * with the same steps (read the server's TIME, check the calling convention, a shared
 * helper function) keep those steps once, in `includes/<name>.lua` beside the scripts,
 * and pull them in with a directive line:
 *
 *     --- @include "server-time-ms"
 *
 * Three dashes, so the unassembled file is still valid Lua (a comment); at the start
 * of a line, after the script's header. The registry replaces each directive with the
 * include's text (whose own directives are expanded the same way) when it loads the
 * scripts, before the SHA1 is computed: Redis only ever sees the assembled script,
 * and EVALSHA names exactly that text.
 *
 * - Once: an include pulled in twice (directly or through another include) is inlined
 *   at its first directive only, so a `local function` is never declared twice.
 * - A cycle (`a` includes `b` includes `a`) and a missing include are refused at load,
 *   naming the script, the chain and the known includes: a script that cannot be
 *   assembled must fail the start, not its first call.
 * - Includes are text, not modules: write them as `local function`s (and constants)
 *   the script calls, so what a script uses stays visible in the script.
 *
 * @example
 * const includes = await loadIncludes("/srv/scripts/includes");
 * const { lua, included } = assembleScript("take-token-1.lua", source, includes);
 * // included: ["server-time-ms"]; lua: source with the directive replaced by the include
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { redisErrors } from "./redis-errors.ts";

/** A line that starts like a directive; the rest of the line is then checked strictly. */
const DIRECTIVE_START = /^---[ \t]*@include\b/;
/** Any line starting like a directive, with what follows `@include` (the `m` flag: one line each). */
const DIRECTIVE_LINE = /^---[ \t]*@include\b([^\n]*)$/gm;
/** What must follow `@include`: one quoted kebab-case name, nothing else. */
const DIRECTIVE_ARGUMENT = /^[ \t]+"([a-z][a-z0-9]*(?:-[a-z0-9]+)*)"[ \t]*\r?$/;
const INCLUDE_FILE = /^([a-z][a-z0-9]*(?:-[a-z0-9]+)*)\.lua$/;

/** Bound on include files read from one folder, as for scripts. */
export const maxIncludesPerDir = 256;

/** Include name → its Lua text. */
export type ScriptIncludes = ReadonlyMap<string, string>;

/** True for a line that is an include directive (well formed or not). */
export function isIncludeDirective(line: string): boolean {
  return DIRECTIVE_START.test(line);
}

/**
 * Replaces every `--- @include "name"` line of `lua` with the include's text, recursively,
 * each include once. Text without a directive comes back unchanged (byte for byte).
 * Throws REDIS_SCRIPT_INVALID naming `file` on a malformed directive, a missing include
 * or a cycle.
 */
export function assembleScript(
  file: string,
  lua: string,
  includes: ScriptIncludes,
): { lua: string; included: string[] } {
  const included: string[] = [];
  const invalid = (detail: string) =>
    redisErrors.create("REDIS_SCRIPT_INVALID", { detail: `${file}: ${detail}`, fields: { file } });
  const expand = (text: string, chain: readonly string[]): string =>
    text.replace(DIRECTIVE_LINE, (line, rest: string) => {
      const name = DIRECTIVE_ARGUMENT.exec(rest)?.[1];
      const where = chain.length > 0 ? ` (in include "${chain.at(-1)}")` : "";
      if (!name) throw invalid(`cannot read "${line.trim()}"${where}; write --- @include "kebab-name"`);
      if (chain.includes(name)) throw invalid(`include cycle ${[...chain, name].join(" -> ")}`);
      const source = includes.get(name);
      if (source === undefined) {
        const known = [...includes.keys()].sort().join(", ") || "(none)";
        throw invalid(`includes "${name}"${where}, but there is no includes/${name}.lua; known: ${known}`);
      }
      if (included.includes(name)) return ""; // once: its first directive already inlined it
      included.push(name);
      return expand(source.replace(/\r?\n$/, ""), [...chain, name]);
    });
  return { lua: expand(lua, []), included };
}

/**
 * Reads every `<name>.lua` of `dir` as an include; a folder that does not exist holds
 * none (a system without includes needs no empty folder).
 */
export async function loadIncludes(dir: string | URL): Promise<ScriptIncludes> {
  const path = typeof dir === "string" ? dir : fileURLToPath(dir);
  let files: string[];
  try {
    files = (await readdir(path)).filter((file) => file.endsWith(".lua")).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return new Map();
    throw error;
  }
  if (files.length > maxIncludesPerDir) {
    throw redisErrors.create("REDIS_SCRIPT_INVALID", {
      detail: `${path} holds ${files.length} includes; the bound is ${maxIncludesPerDir}.`,
    });
  }
  const entries = await Promise.all(
    files.map(async (file): Promise<[string, string]> => {
      const name = INCLUDE_FILE.exec(file)?.[1];
      if (!name) {
        throw redisErrors.create("REDIS_SCRIPT_INVALID", {
          detail: `${path}/${file}: name an include <kebab-name>.lua, e.g. server-time-ms.lua`,
          fields: { file },
        });
      }
      return [name, await readFile(`${path}/${file}`, "utf8")];
    }),
  );
  return new Map(entries);
}
