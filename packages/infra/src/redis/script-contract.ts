/**
 * The contract a Lua script carries in its file: the NAME says what it is and how
 * many keys it takes (`take-token-1.lua`: name `take-token`, 1 key, the BullMQ
 * convention), the HEADER says what each key and argument means and what comes
 * back. Both are checked when the script is loaded, so a script whose header drifts
 * from its name fails at start, not at 3 a.m. on the first call.
 *
 * Header format (the opening run of `--` lines; other lines there are free text):
 *
 *     -- take-token: takes one token from a bucket refilled at a fixed rate.
 *     -- KEYS[1] bucket hash {tokens, refilledAtMs}
 *     -- ARGV[1] capacity (integer >= 1)
 *     -- ARGV[2] refillPerS
 *     -- ARGV[3..] tags (zero or more; a variadic tail, last ARGV line only)
 *     -- returns {allowed 1|0, tokens left, retryAfterMs}
 *
 * A script that takes any number of keys (all in one hash slot) is named
 * `<name>-n.lua` and declares them with one variadic line, `-- KEYS[1..] what each holds`.
 *
 * Includes (`script-includes.ts`): after the header, a line `--- @include "name"` pulls
 * in `includes/name.lua`. The header ends at the first line that is not a `--` comment
 * or is a directive; the contract is then checked on the ASSEMBLED script (a body read
 * of `ARGV[4]` inside an include counts), and the SHA1 is the assembled text's.
 *
 * @example
 * const script = parseScript("take-token-1.lua", readFileSync(path, "utf8"));
 * checkCall(script, ["bucket:u1"], [10, 5]); // throws REDIS_SCRIPT_ARITY on a mismatch
 */
import { createHash } from "node:crypto";
import { redisErrors } from "./redis-errors.ts";
import { assembleScript, isIncludeDirective, type ScriptIncludes } from "./script-includes.ts";

export interface ScriptContract {
  /** `take-token` for `take-token-1.lua`. */
  name: string;
  /** Number of KEYS, from the file name; `Infinity` for `<name>-n.lua` (one or more keys). */
  numKeys: number;
  /** What KEYS[i + 1] holds, from the header. */
  keys: string[];
  /** What ARGV[i + 1] holds, from the header (a variadic tail's line is the last entry). */
  args: string[];
  /** Arguments every call must pass; `args.length` unless the last ARGV line is variadic. */
  minArgs: number;
  /** Upper bound on arguments; `Infinity` when the last ARGV line is `ARGV[n..]`. */
  maxArgs: number;
  /** What the script returns, from the header. */
  returns: string;
  /** The file it came from, for error messages. */
  file: string;
}

export interface ScriptSource extends ScriptContract {
  /** The assembled script (its includes inlined): the text Redis runs. */
  lua: string;
  /** SHA1 of the exact assembled text, as EVALSHA and SCRIPT LOAD compute it. */
  sha1: string;
  /** The includes inlined, in the order they appear. */
  includes: string[];
}

/** A script argument as callers pass it; Redis receives every ARGV as a string. */
export type ScriptArg = string | number;

const FILE_PATTERN = /^([a-z][a-z0-9]*(?:-[a-z0-9]+)*)-(\d+|n)\.lua$/;
const KEYS_LINE = /^KEYS\[(\d+)(\.\.)?\]\s+(\S.*)$/;
const ARGV_LINE = /^ARGV\[(\d+)(\.\.)?\]\s+(\S.*)$/;
const RETURNS_LINE = /^returns?\s*:?\s+(\S.*)$/i;

/**
 * Parses and validates one script file, its includes inlined from `includes`; throws
 * REDIS_SCRIPT_INVALID naming the file and the fault.
 */
export function parseScript(
  file: string,
  source: string,
  includes: ScriptIncludes = new Map(),
): ScriptSource {
  const invalid = (detail: string) =>
    redisErrors.create("REDIS_SCRIPT_INVALID", { detail: `${file}: ${detail}`, fields: { file } });
  const match = FILE_PATTERN.exec(file);
  if (!match)
    throw invalid("name it <kebab-name>-<numKeys>.lua (or -n.lua for any number), e.g. take-token-1.lua");
  const name = match[1]!;
  const numKeys = match[2] === "n" ? Infinity : Number(match[2]);
  const { lua, included } = assembleScript(file, source, includes);
  // The header is read from the source (a directive ends it) and its lines are the same in
  // the assembled text, which has only the body changed.
  const lines = lua.split(/\r?\n/);
  const headerLength = source
    .split(/\r?\n/)
    .findIndex((line) => !line.startsWith("--") || isIncludeDirective(line));
  const header = lines.slice(0, headerLength === -1 ? lines.length : headerLength);
  if (header.length === 0)
    throw invalid("the file must open with a `--` header listing KEYS, ARGV and returns");
  const parsed = parseHeaderLines(header.map((line) => line.replace(/^--+\s?/, "").trim()));
  if (typeof parsed === "string") throw invalid(parsed);
  if (numKeys === Infinity ? !parsed.variadicKeys : parsed.variadicKeys || parsed.keys.length !== numKeys) {
    if (numKeys === Infinity || parsed.variadicKeys) {
      throw invalid("a -n.lua script declares its keys with one `-- KEYS[1..] what` line, and only it does");
    }
    throw invalid(
      `the header lists ${parsed.keys.length} KEYS line(s) but the file name says ${numKeys}; ` +
        "they must agree (one `-- KEYS[i] what` line per key)",
    );
  }
  const body = lines.slice(header.length).map(stripLuaComment).join("\n");
  const overreach = checkBodyIndexes(body, numKeys, parsed.variadic ? Infinity : parsed.args.length);
  if (overreach) throw invalid(overreach);
  const minArgs = parsed.variadic ? parsed.args.length - 1 : parsed.args.length;
  const maxArgs = parsed.variadic ? Infinity : parsed.args.length;
  const sha1 = createHash("sha1").update(lua).digest("hex");
  return {
    name,
    numKeys,
    keys: parsed.keys,
    args: parsed.args,
    minArgs,
    maxArgs,
    returns: parsed.returns,
    file,
    lua,
    sha1,
    includes: included,
  };
}

interface ParsedHeader {
  keys: string[];
  variadicKeys: boolean;
  args: string[];
  variadic: boolean;
  returns: string;
}

/** Returns the header's parts, or a message saying what is wrong with it. */
function parseHeaderLines(lines: string[]): ParsedHeader | string {
  const keys: string[] = [];
  const args: string[] = [];
  const returns: string[] = [];
  let variadic = false;
  let variadicKeys = false;
  for (const line of lines) {
    const keyLine = KEYS_LINE.exec(line);
    const argLine = ARGV_LINE.exec(line);
    const returnLine = RETURNS_LINE.exec(line);
    if (keyLine) {
      if (variadicKeys) return "a variadic KEYS[1..] line must be the only KEYS line";
      if (Number(keyLine[1]) !== keys.length + 1)
        return `expected KEYS[${keys.length + 1}], found KEYS[${keyLine[1]}]`;
      variadicKeys = keyLine[2] === "..";
      if (variadicKeys && keys.length > 0) return "a variadic KEYS[1..] line must be the only KEYS line";
      keys.push(keyLine[3]!);
    } else if (argLine) {
      if (variadic)
        return `ARGV[${argLine[1]}] follows a variadic ARGV[n..] line; the variadic line must be last`;
      if (Number(argLine[1]) !== args.length + 1)
        return `expected ARGV[${args.length + 1}], found ARGV[${argLine[1]}]`;
      variadic = argLine[2] === "..";
      args.push(argLine[3]!);
    } else if (returnLine) {
      returns.push(returnLine[1]!);
    } else if (/^(KEYS|ARGV)\b/.test(line)) {
      return `cannot read header line "${line}"; write \`-- KEYS[1] what it holds\``;
    }
  }
  if (returns.length !== 1)
    return `the header needs exactly one \`-- returns …\` line, found ${returns.length}`;
  return { keys, variadicKeys, args, variadic, returns: returns[0]! };
}

/** Catches a body that reads a KEYS/ARGV slot its header does not declare. */
function checkBodyIndexes(body: string, numKeys: number, maxArgs: number): string | undefined {
  for (const [, kind, index] of body.matchAll(/\b(KEYS|ARGV)\[(\d+)\]/g)) {
    const bound = kind === "KEYS" ? numKeys : maxArgs;
    if (Number(index) > bound) return `the body reads ${kind}[${index}] but the header declares ${bound}`;
  }
  return undefined;
}

function stripLuaComment(line: string): string {
  const at = line.indexOf("--");
  return at === -1 ? line : line.slice(0, at);
}

/**
 * Validates a call against the contract and converts the arguments to the exact strings
 * Redis would receive, so the real script and its twin see the same ARGV.
 */
export function checkCall(
  script: ScriptContract,
  keys: readonly string[],
  args: readonly ScriptArg[],
): string[] {
  const arity = (detail: string) =>
    redisErrors.create("REDIS_SCRIPT_ARITY", {
      detail: `${script.name}: ${detail}`,
      fields: { script: script.name, keys: keys.length, args: args.length },
    });
  const keysOk = script.numKeys === Infinity ? keys.length >= 1 : keys.length === script.numKeys;
  if (!keysOk) {
    const wanted = script.numKeys === Infinity ? "one or more" : String(script.numKeys);
    throw arity(`takes ${wanted} key(s) (${script.keys.join("; ")}), got ${keys.length}`);
  }
  if (args.length < script.minArgs || args.length > script.maxArgs) {
    const wanted = script.maxArgs === Infinity ? `at least ${script.minArgs}` : String(script.minArgs);
    throw arity(`takes ${wanted} argument(s) (${script.args.join("; ")}), got ${args.length}`);
  }
  return args.map((arg, index) => {
    if (typeof arg === "number" && !Number.isFinite(arg)) {
      throw arity(`ARGV[${index + 1}] is ${arg}; pass a finite number or a string`);
    }
    return String(arg);
  });
}
