/**
 * Argument parsing shared by the subcommands: node:util's `parseArgs` (strict),
 * with its errors turned into CLI_USAGE naming the flag, a "Did you mean" guess
 * and the subcommand's `--help`; arguments after `--` are kept apart for the child.
 *
 * @example
 * const { values, positionals, passThrough } = parseCommandArgs("run", ["alpha", "--port", "8150", "--", "-v"], {
 *   port: { type: "string" }, help: { type: "boolean", short: "h" },
 * });
 * // values.port === "8150", positionals ["alpha"], passThrough ["-v"]
 */
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { cliErrors } from "./cli-errors.ts";
import { didYouMean } from "./did-you-mean.ts";

export interface ParsedCommandArgs<Options extends ParseArgsOptionsConfig> {
  values: ReturnType<typeof parseArgs<{ options: Options; allowPositionals: true; strict: true }>>["values"];
  positionals: string[];
  /** Everything after the first `--`, untouched. */
  passThrough: string[];
}

export function parseCommandArgs<Options extends ParseArgsOptionsConfig>(
  command: string,
  argv: readonly string[],
  options: Options,
): ParsedCommandArgs<Options> {
  const split = argv.indexOf("--");
  const own = split === -1 ? [...argv] : argv.slice(0, split);
  const passThrough = split === -1 ? [] : argv.slice(split + 1);
  try {
    const { values, positionals } = parseArgs({ args: own, options, allowPositionals: true, strict: true });
    return { values, positionals, passThrough };
  } catch (error) {
    throw usageFromParseError(command, error, Object.keys(options));
  }
}

/**
 * `casebook run <name> …`: after the system's name, options casebook does not know go to the
 * system as if they followed `--` (so `casebook run cache --nodes 6 --replicas 1` works);
 * casebook's own options still count anywhere, and everything before the name is checked
 * strictly. Returns argv rewritten as `<own…> -- <passed…>`.
 *
 * @example
 * passUnknownAfterName(["cache", "--nodes", "6", "--logs", "raw"], { logs: { type: "string" } });
 * // ["cache", "--logs", "raw", "--", "--nodes", "6"]
 */
export function passUnknownAfterName(argv: readonly string[], options: ParseArgsOptionsConfig): string[] {
  const own: string[] = [];
  const passed: string[] = [];
  const known = (token: string) => {
    const name = token.startsWith("--") ? token.slice(2).split("=")[0]! : token.slice(1);
    const entry = token.startsWith("--")
      ? options[name]
      : Object.values(options).find((option) => option.short === name);
    return entry;
  };
  let named = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === "--") {
      passed.push(...argv.slice(i + 1));
      break;
    }
    const option = token.startsWith("-") && token !== "-" ? known(token) : undefined;
    if (option !== undefined) {
      own.push(token);
      if (option.type === "string" && !token.includes("=") && i + 1 < argv.length) own.push(argv[++i]!);
    } else if (!named && !token.startsWith("-")) {
      named = true;
      own.push(token);
    } else if (named) {
      passed.push(token);
    } else {
      own.push(token); // an unknown option before the name: parseArgs refuses it by name
    }
  }
  return passed.length === 0 ? own : [...own, "--", ...passed];
}

function usageFromParseError(command: string, error: unknown, known: string[]): Error {
  const code = (error as { code?: string }).code ?? "";
  const message = (error as Error).message ?? String(error);
  const flag = /'(-[^']*)'/.exec(message)?.[1];
  const help = `Run \`casebook ${command} --help\` for its options.`;
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && flag !== undefined) {
    const guess = didYouMean(flag.replace(/^-+/, ""), known);
    return cliErrors.create("CLI_USAGE", {
      detail: `unknown option '${flag}' for \`casebook ${command}\`.`,
      fields: { hint: guess ? `Did you mean '--${guess}'? ${help}` : help },
    });
  }
  if (code.startsWith("ERR_PARSE_ARGS")) {
    // parseArgs' own wording names the flag and what it expected; keep its first sentence.
    return cliErrors.create("CLI_USAGE", { detail: message.split(". ")[0]!, fields: { hint: help } });
  }
  return error as Error;
}

/** A whole number of milliseconds (or another count) from a flag, at least `min`. */
export function parseCount(value: string | undefined, flag: string, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) {
    throw cliErrors.create("CLI_USAGE", {
      detail: `${flag} ${value} is not valid; give a whole number >= ${min}.`,
      fields: { hint: `For example: ${flag} ${fallback}` },
    });
  }
  return n;
}
