/**
 * Configuration from environment variables and an optional, already-parsed file,
 * validated at start (ARCHITECTURE rule 5: a bad value fails the start with one
 * message that names it). Environment variables override the file, the file
 * overrides defaults. Every problem is collected, then ONE ConfigError lists them
 * all, so an operator fixes a deployment in one round instead of one per variable.
 *
 * Reading the file is I/O and lives in the caller; this module stays pure.
 *
 * @example
 * const schema = {
 *   port: field.int({ env: "PORT", default: 8100, min: 1, max: 65535, description: "HTTP port" }),
 *   databaseUrl: field.url({ env: "DATABASE_URL", protocols: ["postgres:"], description: "PostgreSQL" }),
 *   logLevel: field.enum(["debug", "info", "warn"], { env: "LOG_LEVEL", default: "info", description: "Log level" }),
 * };
 * const config = loadConfig(schema, { env: process.env, file: parsedYaml });
 * config.port;        // number
 * config.databaseUrl; // string | undefined (no default, not required)
 */
import { CasebookError } from "./errors.ts";
import { kitErrors } from "./kit-errors.ts";

const FIELD = Symbol("casebook.config-field");
const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
/** Longest excerpt of a bad value quoted in a message: enough to recognise it, bounded for logs. */
const MAX_SHOWN_CHARS = 80;

export type FieldKind = "string" | "int" | "number" | "bool" | "enum" | "url" | "duration-ms";

/** One setting. `Out` is its type in the loaded config (with `undefined` when it may be absent). */
export interface Field<Out> {
  readonly [FIELD]: true;
  readonly kind: FieldKind;
  /** The environment variable that sets it. */
  readonly env: string;
  readonly description: string;
  readonly defaultValue: Exclude<Out, undefined> | undefined;
  readonly required: boolean;
  /** Never quoted in messages or help (API keys, passwords in URLs). */
  readonly secret: boolean;
  /** What a valid value looks like, for messages: "an integer 1..65535". */
  readonly expected: string;
  /** The parsed value, or undefined when `raw` (a string from env, any JSON value from a file) is invalid. */
  parse(raw: unknown): Exclude<Out, undefined> | undefined;
  /** A value as an operator would write it (for --help defaults). */
  show(value: Exclude<Out, undefined>): string;
}

/** A schema: settings by key, optionally grouped (a group maps to a nested object in the file). */
export interface Schema {
  readonly [key: string]: Field<unknown> | Schema;
}

/** The loaded configuration's type, inferred from the schema. */
export type ConfigOf<S extends Schema> = {
  readonly [K in keyof S]: S[K] extends Field<infer Out> ? Out : S[K] extends Schema ? ConfigOf<S[K]> : never;
};

export interface CommonOptions<T> {
  env: string;
  description: string;
  default?: T;
  /** Fail the start when no source sets it. Meaningless with a default, so refused with one. */
  required?: boolean;
  secret?: boolean;
}

/** The value type: always present with a default or when required, else possibly undefined. */
type Resolve<T, O> = O extends { default: T } ? T : O extends { required: true } ? T : T | undefined;

export interface StringOptions extends CommonOptions<string> {
  minLength?: number;
  maxLength?: number;
  pattern?: RegExp;
}
export interface RangeOptions<T> extends CommonOptions<T> {
  min?: number;
  max?: number;
}
export interface UrlOptions extends CommonOptions<string> {
  /** Accepted schemes, with or without the colon: ["http", "https:"]. Default: any. */
  protocols?: readonly string[];
}

function rangeText(
  noun: string,
  min: number | undefined,
  max: number | undefined,
  show: (n: number) => string = String,
): string {
  if (min !== undefined && max !== undefined) return `${noun} ${show(min)}..${show(max)}`;
  if (min !== undefined) return `${noun} >= ${show(min)}`;
  if (max !== undefined) return `${noun} <= ${show(max)}`;
  return noun;
}

function inRange(value: number, min: number | undefined, max: number | undefined): boolean {
  return (min === undefined || value >= min) && (max === undefined || value <= max);
}

function checkRange(env: string, min: number | undefined, max: number | undefined): void {
  for (const [name, bound] of [
    ["min", min],
    ["max", max],
  ] as const) {
    if (bound !== undefined && !Number.isFinite(bound)) throw new TypeError(`${env}: ${name} must be finite`);
  }
  if (min !== undefined && max !== undefined && min > max)
    throw new TypeError(`${env}: min ${min} > max ${max}`);
}

function makeField<T>(
  kind: FieldKind,
  options: CommonOptions<T>,
  expected: string,
  parse: (raw: unknown) => T | undefined,
  show: (value: T) => string = String,
): Field<T> {
  if (!ENV_NAME.test(options.env)) throw new TypeError(`env name ${options.env} must look like UPPER_SNAKE`);
  if (options.description.trim() === "") throw new TypeError(`${options.env} needs a description`);
  if (options.required === true && options.default !== undefined) {
    throw new TypeError(`${options.env} has a default, so it cannot also be required`);
  }
  if (options.default !== undefined && parse(options.default) === undefined) {
    throw new TypeError(`${options.env}: default ${String(options.default)} is not ${expected}`);
  }
  return {
    [FIELD]: true,
    kind,
    env: options.env,
    description: options.description,
    defaultValue: options.default as Exclude<T, undefined> | undefined,
    required: options.required ?? false,
    secret: options.secret ?? false,
    expected,
    parse: parse as (raw: unknown) => Exclude<T, undefined> | undefined,
    show: show as (value: Exclude<T, undefined>) => string,
  };
}

const INT_TEXT = /^[+-]?\d+$/;
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const TRUE_WORDS = new Set(["true", "1", "yes", "on"]);
const FALSE_WORDS = new Set(["false", "0", "no", "off"]);

/** A number from a file value or from trimmed env text matching `text`. */
function numeric(raw: unknown, text: RegExp): number | undefined {
  if (typeof raw === "number") return raw;
  if (typeof raw === "string" && text.test(raw.trim())) return Number(raw.trim());
  return undefined;
}

function stringField<const O extends StringOptions>(options: O): Field<Resolve<string, O>> {
  const { minLength, maxLength, pattern } = options;
  checkRange(options.env, minLength, maxLength);
  let expected = rangeText("a string", minLength, maxLength);
  if (minLength !== undefined || maxLength !== undefined) expected += " characters long";
  if (pattern !== undefined) expected += ` matching ${pattern}`;
  const parse = (raw: unknown) => {
    if (typeof raw !== "string" || !inRange(raw.length, minLength, maxLength)) return undefined;
    return pattern === undefined || pattern.test(raw) ? raw : undefined;
  };
  return makeField("string", options, expected, parse) as Field<Resolve<string, O>>;
}

function intField<const O extends RangeOptions<number>>(options: O): Field<Resolve<number, O>> {
  checkRange(options.env, options.min, options.max);
  const parse = (raw: unknown) => {
    const value = numeric(raw, INT_TEXT);
    return value !== undefined && Number.isSafeInteger(value) && inRange(value, options.min, options.max)
      ? value
      : undefined;
  };
  const expected = rangeText("an integer", options.min, options.max);
  return makeField("int", options, expected, parse) as Field<Resolve<number, O>>;
}

function numberField<const O extends RangeOptions<number>>(options: O): Field<Resolve<number, O>> {
  checkRange(options.env, options.min, options.max);
  const parse = (raw: unknown) => {
    const value = numeric(raw, NUMBER_TEXT);
    return value !== undefined && Number.isFinite(value) && inRange(value, options.min, options.max)
      ? value
      : undefined;
  };
  const expected = rangeText("a number", options.min, options.max);
  return makeField("number", options, expected, parse) as Field<Resolve<number, O>>;
}

function boolField<const O extends CommonOptions<boolean>>(options: O): Field<Resolve<boolean, O>> {
  const parse = (raw: unknown) => {
    if (typeof raw === "boolean") return raw;
    if (typeof raw !== "string") return undefined;
    const word = raw.trim().toLowerCase();
    return TRUE_WORDS.has(word) ? true : FALSE_WORDS.has(word) ? false : undefined;
  };
  const expected = "a boolean (true/false, 1/0, yes/no, on/off)";
  return makeField("bool", options, expected, parse) as Field<Resolve<boolean, O>>;
}

function enumField<const V extends readonly [string, ...string[]], const O extends CommonOptions<V[number]>>(
  values: V,
  options: O,
): Field<Resolve<V[number], O>> {
  const allowed = new Set<string>(values);
  const parse = (raw: unknown) =>
    typeof raw === "string" && allowed.has(raw.trim()) ? (raw.trim() as V[number]) : undefined;
  const expected = `one of ${values.join(", ")}`;
  return makeField("enum", options, expected, parse) as Field<Resolve<V[number], O>>;
}

function urlField<const O extends UrlOptions>(options: O): Field<Resolve<string, O>> {
  const protocols = options.protocols?.map((p) => (p.endsWith(":") ? p : `${p}:`));
  const parse = (raw: unknown) => {
    if (typeof raw !== "string" || !URL.canParse(raw.trim())) return undefined;
    const url = new URL(raw.trim());
    return protocols === undefined || protocols.includes(url.protocol) ? raw.trim() : undefined;
  };
  const expected = protocols === undefined ? "a URL" : `a ${protocols.join(" or ")} URL`;
  return makeField("url", options, expected, parse) as Field<Resolve<string, O>>;
}

const DURATION_UNITS_MS: Readonly<Record<string, number>> = {
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1_000,
  ms: 1,
};
const DURATION_TEXT = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;
const DURATION_PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** Parses "250ms", "30s", "1h30m", or a bare number of milliseconds; undefined when malformed. */
export function parseDurationMs(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  if (!DURATION_TEXT.test(trimmed)) return undefined;
  let totalMs = 0;
  for (const [, amount, unit] of trimmed.matchAll(DURATION_PART))
    totalMs += Number(amount) * DURATION_UNITS_MS[unit!]!;
  return totalMs;
}

/** Formats milliseconds the way parseDurationMs reads them: 5_400_000 → "1h30m". */
export function formatDurationMs(ms: number): string {
  if (ms === 0) return "0ms";
  let rest = ms;
  let text = "";
  for (const unit of ["d", "h", "m", "s"]) {
    const size = DURATION_UNITS_MS[unit]!;
    const whole = Math.floor(rest / size);
    if (whole > 0) text += `${whole}${unit}`;
    rest -= whole * size;
  }
  return rest > 0 ? `${text}${rest}ms` : text;
}

function durationField<const O extends RangeOptions<number>>(options: O): Field<Resolve<number, O>> {
  checkRange(options.env, options.min, options.max);
  const parse = (raw: unknown) => {
    const value = typeof raw === "number" ? raw : typeof raw === "string" ? parseDurationMs(raw) : undefined;
    return value !== undefined &&
      Number.isFinite(value) &&
      value >= 0 &&
      inRange(value, options.min, options.max)
      ? value
      : undefined;
  };
  const range = rangeText("a duration", options.min, options.max, formatDurationMs);
  const expected = `${range} (like 250ms, 30s or 1h30m)`;
  return makeField("duration-ms", options, expected, parse, formatDurationMs) as Field<Resolve<number, O>>;
}

/**
 * The schema DSL: one constructor per kind of setting.
 *
 * @example
 * field.durationMs({ env: "SHUTDOWN_TIMEOUT", default: 10_000, max: 60_000, description: "Drain time" });
 */
export const field = {
  string: stringField,
  int: intField,
  number: numberField,
  bool: boolField,
  enum: enumField,
  url: urlField,
  durationMs: durationField,
};

function isField(node: Field<unknown> | Schema): node is Field<unknown> {
  return (node as Field<unknown>)[FIELD] === true;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Every field with its dotted path, depth first in schema order. */
function fieldsOf(schema: Schema, prefix = ""): { path: string; field: Field<unknown> }[] {
  return Object.entries(schema).flatMap(([key, node]) => {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    return isField(node) ? [{ path, field: node }] : fieldsOf(node, path);
  });
}

/** One thing wrong with the configuration. */
export interface ConfigProblem {
  /** Dotted schema path: "server.port". */
  readonly setting: string;
  readonly env: string | undefined;
  readonly source: "env" | "file" | "missing";
  /** The offending value as quoted in the message (redacted for secrets). */
  readonly value: string | undefined;
  readonly expected: string;
  readonly message: string;
}

/** Thrown by loadConfig with every problem found; `message` lists them one per line. */
export class ConfigError extends CasebookError {
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const count = problems.length === 1 ? "1 problem" : `${problems.length} problems`;
    const detail = `Invalid configuration (${count}):\n${problems.map((p) => `  ${p.message}`).join("\n")}`;
    super("CONFIG_INVALID", kitErrors.specs.CONFIG_INVALID, { detail, fields: { problems } });
    this.name = "ConfigError";
    this.problems = problems;
  }
}

function quote(value: unknown, secret: boolean): string {
  if (secret) return "<redacted>";
  const text = JSON.stringify(value) ?? String(value);
  return text.length > MAX_SHOWN_CHARS ? `${text.slice(0, MAX_SHOWN_CHARS)}…` : text;
}

export interface ConfigSources {
  /** Environment variables (process.env in production). An empty string counts as unset. */
  env: Readonly<Record<string, string | undefined>>;
  /** The config file's content, already parsed (YAML/JSON), keyed like the schema. */
  file?: unknown;
}

interface Walk {
  readonly env: ConfigSources["env"];
  readonly problems: ConfigProblem[];
}

function resolveField(f: Field<unknown>, setting: string, fileValue: unknown, walk: Walk): unknown {
  const problem = (source: ConfigProblem["source"], raw: unknown, message: string) =>
    walk.problems.push({
      setting,
      env: f.env,
      source,
      value: raw === undefined ? undefined : quote(raw, f.secret),
      expected: f.expected,
      message,
    });
  // Shells and compose files often export unset placeholders as empty strings: treat "" as unset.
  const envRaw = walk.env[f.env];
  if (envRaw !== undefined && envRaw !== "") {
    const value = f.parse(envRaw);
    if (value === undefined)
      problem("env", envRaw, `${f.env}=${quote(envRaw, f.secret)}: expected ${f.expected}`);
    return value;
  }
  if (fileValue !== undefined && fileValue !== null) {
    const value = f.parse(fileValue);
    if (value === undefined) {
      const shown = quote(fileValue, f.secret);
      problem(
        "file",
        fileValue,
        `${setting}=${shown} in the config file (env ${f.env}): expected ${f.expected}`,
      );
    }
    return value;
  }
  if (f.defaultValue !== undefined) return f.defaultValue;
  if (f.required)
    problem("missing", undefined, `${f.env} is required: expected ${f.expected} (${f.description})`);
  return undefined;
}

function fileProblem(walk: Walk, setting: string, raw: unknown, message: string): void {
  const value = quote(raw, false);
  walk.problems.push({
    setting,
    env: undefined,
    source: "file",
    value,
    expected: "a known setting",
    message,
  });
}

function resolveGroup(schema: Schema, file: Record<string, unknown> | undefined, prefix: string, walk: Walk) {
  const out: Record<string, unknown> = {};
  for (const [key, node] of Object.entries(schema)) {
    const setting = prefix === "" ? key : `${prefix}.${key}`;
    const fileValue = file?.[key];
    if (isField(node)) {
      out[key] = resolveField(node, setting, fileValue, walk);
      continue;
    }
    const nested = isPlainObject(fileValue) ? fileValue : undefined;
    if (fileValue !== undefined && fileValue !== null && nested === undefined) {
      fileProblem(walk, setting, fileValue, `${setting} in the config file must be a group of settings`);
    }
    out[key] = resolveGroup(node, nested, setting, walk);
  }
  // A typo in a file key would otherwise be silently ignored and its default used.
  for (const key of Object.keys(file ?? {})) {
    if (!Object.hasOwn(schema, key)) {
      const setting = prefix === "" ? key : `${prefix}.${key}`;
      fileProblem(walk, setting, file?.[key], `${setting} in the config file is not a known setting`);
    }
  }
  return Object.freeze(out);
}

/**
 * Loads and validates the configuration: env over file over default. Throws one
 * ConfigError listing every problem; the result is frozen and typed from the schema.
 *
 * @example
 * loadConfig({ port: field.int({ env: "PORT", default: 8100, min: 1, max: 65535, description: "HTTP port" }) },
 *   { env: { PORT: "abc" } });
 * // ConfigError: Invalid configuration (1 problem):
 * //   PORT="abc": expected an integer 1..65535
 */
export function loadConfig<const S extends Schema>(schema: S, sources: ConfigSources): ConfigOf<S> {
  const seen = new Map<string, string>();
  for (const { path, field: f } of fieldsOf(schema)) {
    const other = seen.get(f.env);
    if (other !== undefined) throw new TypeError(`env ${f.env} is used by both ${other} and ${path}`);
    seen.set(f.env, path);
  }
  const walk: Walk = { env: sources.env, problems: [] };
  const file = sources.file;
  if (file !== undefined && file !== null && !isPlainObject(file)) {
    fileProblem(walk, "(file)", file, "the config file must hold a mapping of settings");
  }
  const config = resolveGroup(schema, isPlainObject(file) ? file : undefined, "", walk);
  if (walk.problems.length > 0) throw new ConfigError(walk.problems);
  return config as ConfigOf<S>;
}

/**
 * Help text for `--help`: one aligned line per setting with its env var, default
 * (or "required"/"optional"), description and what it accepts.
 *
 * @example
 * describeConfig(schema).join("\n");
 * // PORT          default 8100   HTTP port (an integer 1..65535)
 */
export function describeConfig(schema: Schema): string[] {
  const rows = fieldsOf(schema).map(({ field: f }) => {
    const fallback =
      f.defaultValue !== undefined
        ? `default ${f.secret ? "<redacted>" : f.show(f.defaultValue)}`
        : f.required
          ? "required"
          : "optional";
    return [f.env, fallback, `${f.description} (${f.expected})`] as const;
  });
  const envWidth = Math.max(0, ...rows.map((r) => r[0].length));
  const fallbackWidth = Math.max(0, ...rows.map((r) => r[1].length));
  return rows.map(
    ([env, fallback, text]) => `${env.padEnd(envWidth)}  ${fallback.padEnd(fallbackWidth)}  ${text}`,
  );
}
