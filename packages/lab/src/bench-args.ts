/**
 * A bench's command line, declared once: each flag's type, bounds and default, and the
 * `--help` lines built from the same declaration, so the bounds the parser enforces are
 * the bounds the help prints. Every number has a bound so a typo (`--duration-ms
 * 50000000`) is refused instead of running for a day. The bench keeps its own error code:
 * `invalid` builds the error a bad flag throws (lab's bench-main exits 2 with its message).
 *
 * @example
 * const cli = defineBenchArgs({
 *   flags: {
 *     json: flag.boolean({ help: "JSON lines only" }),
 *     durationMs: flag.integer({ min: 100, max: 600_000, default: 5_000, help: "measured time per run" }),
 *     only: flag.choiceList(["closed", "open"], { help: "comma-separated subset" }),
 *     help: flag.boolean({ short: "h", help: "this text" }),
 *   },
 *   invalid: (detail, flag, cause) => benchErrors.create("X_BENCH_ARGS_INVALID", { detail, fields: { flag }, cause }),
 * });
 * cli.parse(["--duration-ms", "300"]).durationMs; // 300
 * cli.flagHelp(); // "  --json              JSON lines only\n  --duration-ms N     measured time per run (default 5000; 100..600000)\n…"
 */
import { parseArgs } from "node:util";

interface FlagBase {
  /** The flag's name without `--`; default: the key in kebab-case (`durationMs` → `duration-ms`). */
  readonly name?: string;
  /**
   * The help text. An integer flag gets ` (default D; MIN..MAX)` appended unless the text
   * holds `{default}`, `{min}` or `{max}` itself (then those are filled in). A `\n` starts a
   * continuation line, indented to the help column.
   */
  readonly help: string;
  /** The help's left column when not `--name VALUE` (`-h, --help`). */
  readonly label?: string;
}

export interface BooleanFlag extends FlagBase {
  readonly kind: "boolean";
  readonly short?: string;
}

export interface IntegerFlag extends FlagBase {
  readonly kind: "integer";
  readonly min: number;
  readonly max: number;
  readonly default: number;
  /** The value's placeholder in the help (`N`, `<ms>`). Default `N`. */
  readonly value?: string;
}

/** A comma-separated list of integers, each within the bounds; deduplicated and sorted. */
export interface IntegerListFlag extends FlagBase {
  readonly kind: "integer-list";
  readonly min: number;
  readonly max: number;
  readonly default: readonly number[];
  readonly value?: string;
}

/** A comma-separated subset of `choices`, returned in the choices' order; default all. */
export interface ChoiceListFlag<C extends string = string> extends FlagBase {
  readonly kind: "choice-list";
  readonly choices: readonly C[];
  readonly value?: string;
}

/** One of `choices`; default `default`. */
export interface ChoiceFlag<C extends string = string> extends FlagBase {
  readonly kind: "choice";
  readonly choices: readonly C[];
  readonly default: C;
  readonly value?: string;
}

export interface StringFlag extends FlagBase {
  readonly kind: "string";
  readonly default: string;
  readonly value?: string;
}

export type FlagSpec = BooleanFlag | IntegerFlag | IntegerListFlag | ChoiceListFlag | ChoiceFlag | StringFlag;

type Without<F> = Omit<F, "kind">;

/** Flag constructors: `flag.integer({ min, max, default, help })`. */
export const flag = {
  boolean: (spec: Without<BooleanFlag>): BooleanFlag => ({ kind: "boolean", ...spec }),
  integer: (spec: Without<IntegerFlag>): IntegerFlag => ({ kind: "integer", ...spec }),
  integerList: (spec: Without<IntegerListFlag>): IntegerListFlag => ({ kind: "integer-list", ...spec }),
  choiceList: <const C extends string>(
    choices: readonly C[],
    spec: Without<Omit<ChoiceListFlag<C>, "choices">>,
  ): ChoiceListFlag<C> => ({ kind: "choice-list", choices, ...spec }),
  /** One value of `choices`: the help lists them and the default. */
  choice: <const C extends string>(
    choices: readonly C[],
    spec: Without<Omit<ChoiceFlag<C>, "choices">>,
  ): ChoiceFlag<C> => ({ kind: "choice", choices, ...spec }),
  string: (spec: Without<StringFlag>): StringFlag => ({ kind: "string", ...spec }),
  /** `-h, --help`: "this text". */
  help: (spec: Partial<Without<BooleanFlag>> = {}): BooleanFlag => ({
    kind: "boolean",
    short: "h",
    label: "-h, --help",
    help: "this text",
    ...spec,
  }),
  /** `--json`: the house's JSON-lines output (bench-report's row keys). */
  json: (
    help = "JSON lines only ({system, scenario, metric, unit, value, peer, peer_value, ratio})",
  ): BooleanFlag => ({
    kind: "boolean",
    help,
  }),
};

type ValueOf<F> = F extends BooleanFlag
  ? boolean
  : F extends IntegerFlag
    ? number
    : F extends IntegerListFlag
      ? readonly number[]
      : F extends ChoiceListFlag<infer C>
        ? readonly C[]
        : F extends ChoiceFlag<infer C>
          ? C
          : string;

/** What `parse` returns: one typed value per declared flag. */
export type ParsedArgs<S extends Record<string, FlagSpec>> = { readonly [K in keyof S]: ValueOf<S[K]> };

export interface BenchArgsSpec<S extends Record<string, FlagSpec>> {
  readonly flags: S;
  /** The bench's own error for a bad flag (`flag` is its name without `--`; `cause` node's parse error). */
  invalid(detail: string, flag: string, cause?: unknown): Error;
  /** Width of the help's left column (`--name VALUE` padded to it). Default 20. */
  readonly helpColumn?: number;
  /** Append `; MIN..MAX` to the integer flags' default in the help. Default true. */
  readonly helpBounds?: boolean;
}

export interface BenchArgsParser<S extends Record<string, FlagSpec>> {
  readonly flags: S;
  /** Parses and validates; throws `invalid(...)` naming the flag at fault. */
  parse(argv: readonly string[]): ParsedArgs<S>;
  /** The flags' help lines, in declaration order, without a trailing newline. */
  flagHelp(): string;
}

/** Digits, optionally grouped by underscores (`1_000_000`): no signs, exponents or hex. */
const INTEGER = /^\d+(_\d+)*$/;

function kebab(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

function integerIn(
  raw: string,
  name: string,
  bounds: { min: number; max: number },
  invalid: BenchArgsSpec<Record<string, FlagSpec>>["invalid"],
): number {
  const value = Number(raw.replaceAll("_", ""));
  if (!INTEGER.test(raw) || value < bounds.min || value > bounds.max) {
    throw invalid(`--${name}: must be an integer in [${bounds.min}, ${bounds.max}], got ${raw}`, name);
  }
  return value;
}

function helpText(spec: FlagSpec, bounds: boolean): string {
  if (spec.kind === "choice")
    return `${spec.help} (one of ${spec.choices.join(", ")}; default ${spec.default})`;
  if (spec.kind !== "integer" && spec.kind !== "integer-list") return spec.help;
  const fallback = spec.kind === "integer" ? String(spec.default) : spec.default.join(",");
  if (/\{(default|min|max)\}/.test(spec.help)) {
    return spec.help
      .replaceAll("{default}", fallback)
      .replaceAll("{min}", String(spec.min))
      .replaceAll("{max}", String(spec.max));
  }
  const range = `${spec.min}..${spec.max}`;
  if (spec.kind === "integer-list") return `${spec.help} (default ${fallback}; each ${range})`;
  return bounds ? `${spec.help} (default ${fallback}; ${range})` : `${spec.help} (default ${fallback})`;
}

/**
 * Declares a bench's flags; see the module's example.
 *
 * @example
 * const cli = defineBenchArgs({ flags: { rounds: flag.integer({ min: 1, max: 21, default: 3, help: "rounds" }) },
 *   invalid: (detail) => new Error(detail) });
 * cli.parse([]).rounds; // 3
 */
export function defineBenchArgs<const S extends Record<string, FlagSpec>>(
  spec: BenchArgsSpec<S>,
): BenchArgsParser<S> {
  const entries = Object.entries(spec.flags).map(([key, f]) => ({
    key,
    name: f.name ?? kebab(key),
    spec: f,
  }));
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {};
  for (const { name, spec: f } of entries) {
    options[name] =
      f.kind === "boolean" ? { type: "boolean", ...(f.short ? { short: f.short } : {}) } : { type: "string" };
  }
  const parse = (argv: readonly string[]): ParsedArgs<S> => {
    let values: Record<string, string | boolean | undefined>;
    try {
      ({ values } = parseArgs({ args: [...argv], strict: true, allowPositionals: false, options }) as {
        values: Record<string, string | boolean | undefined>;
      });
    } catch (cause) {
      throw spec.invalid(`${(cause as Error).message}; see --help`, "argv", cause);
    }
    const out: Record<string, unknown> = {};
    for (const { key, name, spec: f } of entries) {
      const raw = values[name];
      switch (f.kind) {
        case "boolean":
          out[key] = raw === true;
          break;
        case "string":
          out[key] = typeof raw === "string" ? raw : f.default;
          break;
        case "integer":
          out[key] = typeof raw === "string" ? integerIn(raw, name, f, spec.invalid) : f.default;
          break;
        case "integer-list": {
          if (typeof raw !== "string") {
            out[key] = [...f.default];
            break;
          }
          const counts = raw.split(",").map((part) => integerIn(part.trim(), name, f, spec.invalid));
          out[key] = [...new Set(counts)].sort((a, b) => a - b);
          break;
        }
        case "choice":
          if (typeof raw === "string" && !f.choices.includes(raw))
            throw spec.invalid(`--${name}: ${raw} is not one of ${f.choices.join(", ")}`, name);
          out[key] = typeof raw === "string" ? raw : f.default;
          break;
        case "choice-list": {
          if (typeof raw !== "string") {
            out[key] = [...f.choices];
            break;
          }
          const picked = raw.split(",").map((part) => part.trim());
          for (const choice of picked) {
            if (!f.choices.includes(choice)) {
              throw spec.invalid(`--${name}: ${choice} is not one of ${f.choices.join(", ")}`, name);
            }
          }
          out[key] = f.choices.filter((choice) => picked.includes(choice));
          break;
        }
      }
    }
    return out as ParsedArgs<S>;
  };
  const flagHelp = (): string => {
    const column = spec.helpColumn ?? 20;
    const indent = " ".repeat(2 + column);
    return entries
      .map(({ name, spec: f }) => {
        const label =
          f.label ??
          (f.kind === "boolean"
            ? `--${name}`
            : `--${name} ${f.value ?? (f.kind.endsWith("list") ? "LIST" : "N")}`);
        const left = label.length >= column ? `${label}  ` : label.padEnd(column);
        const [first, ...rest] = helpText(f, spec.helpBounds ?? true).split("\n");
        return [`  ${left}${first}`, ...rest.map((line) => `${indent}${line}`)].join("\n");
      })
      .join("\n");
  };
  return { flags: spec.flags, parse, flagHelp };
}
