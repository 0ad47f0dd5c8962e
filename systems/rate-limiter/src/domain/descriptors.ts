/**
 * Request descriptors (envoy ratelimit's word): the attributes of a request a policy
 * can match on and build its counter key from, as an ordered list of key/value
 * entries. Also the two safety steps between a request value and a Redis key:
 * matching (`match:` in the config) and rendering a key template with every value
 * escaped and bounded in length, so no client can forge another client's key,
 * inject a hash tag, or grow a key without limit.
 *
 * @example
 * const d = descriptor({ ip: "203.0.113.9", user: "42", route: "/v1/pay" });
 * const t = parseKeyTemplate("user:{user}:route:{route}");
 * if (t.ok) renderKeyTemplate(t.template, d, { maxValueChars: 64 }); // "user:42:route:/v1/pay"
 */
import { createHash } from "node:crypto";

/** The request attributes policies may use, in their canonical order. */
export const DESCRIPTOR_KEYS = ["ip", "apiKey", "plan", "user", "route", "method"] as const;
export type DescriptorKey = (typeof DESCRIPTOR_KEYS)[number];

/**
 * Values that are credentials: they never appear in a Redis key in clear (KEYS,
 * MONITOR and the slowlog would leak them); the key carries a hash instead.
 */
export const SECRET_DESCRIPTOR_KEYS: ReadonlySet<DescriptorKey> = new Set<DescriptorKey>(["apiKey"]);

/** Bound on one raw descriptor value the resolver accepts, in characters; longer values are hashed. */
export const MAX_RAW_VALUE_CHARS = 4_096;
/** Bounds on `maxValueChars` (the escaped length of one value inside a key). */
export const MIN_VALUE_CHARS = 24;
export const MAX_VALUE_CHARS = 256;
/** Bound on a key template's source, in characters. */
export const MAX_TEMPLATE_CHARS = 200;

export interface DescriptorEntry {
  readonly key: DescriptorKey;
  readonly value: string;
}

/** An ordered list of key/value entries describing one request. */
export type Descriptor = readonly DescriptorEntry[];

/**
 * Builds a descriptor from a record, in canonical key order; absent or empty values are dropped
 * (a policy that needs them simply does not apply).
 *
 * @example
 * descriptor({ user: "42", ip: "10.0.0.1", route: undefined });
 * // [{ key: "ip", value: "10.0.0.1" }, { key: "user", value: "42" }]
 */
export function descriptor(values: Partial<Record<DescriptorKey, string | undefined>>): Descriptor {
  const entries: DescriptorEntry[] = [];
  for (const key of DESCRIPTOR_KEYS) {
    const value = values[key];
    if (value !== undefined && value !== "") entries.push({ key, value });
  }
  return entries;
}

/**
 * The value of `key` in `d`, or undefined; the first entry wins when a key repeats.
 *
 * @example
 * descriptorValue(descriptor({ plan: "free" }), "plan"); // "free"
 */
export function descriptorValue(d: Descriptor, key: DescriptorKey): string | undefined {
  for (const entry of d) if (entry.key === key) return entry.value === "" ? undefined : entry.value;
  return undefined;
}

/**
 * True for a known descriptor key: config typos (`usr`) are refused instead of never matching.
 *
 * @example
 * isDescriptorKey("user"); // true
 */
export function isDescriptorKey(key: string): key is DescriptorKey {
  return (DESCRIPTOR_KEYS as readonly string[]).includes(key);
}

// ---------------------------------------------------------------- matching

/** How one descriptor key must look for a policy to apply. */
export type ValueMatcher =
  | { readonly kind: "present" }
  | { readonly kind: "exact"; readonly values: readonly string[] }
  | { readonly kind: "prefix"; readonly prefix: string };

/** Bound on the alternatives of one `match` entry. */
export const MAX_MATCH_VALUES = 64;

/**
 * Parses one `match` value: `"*"` = present with any value, `"/v1/pay*"` = prefix,
 * `"free"` = exact, `["POST", "PUT"]` = any of. Returns an error text on bad input.
 *
 * @example
 * parseValueMatcher(["POST", "PUT"]); // { ok: true, matcher: { kind: "exact", values: ["POST", "PUT"] } }
 */
export function parseValueMatcher(
  raw: unknown,
): { ok: true; matcher: ValueMatcher } | { ok: false; error: string } {
  if (typeof raw === "string") {
    if (raw === "") return { ok: false, error: "must not be empty" };
    if (raw === "*") return { ok: true, matcher: { kind: "present" } };
    if (raw.endsWith("*")) return { ok: true, matcher: { kind: "prefix", prefix: raw.slice(0, -1) } };
    return { ok: true, matcher: { kind: "exact", values: [raw] } };
  }
  if (Array.isArray(raw)) {
    if (raw.length === 0 || raw.length > MAX_MATCH_VALUES) {
      return { ok: false, error: `must list 1..${MAX_MATCH_VALUES} values` };
    }
    if (!raw.every((v) => typeof v === "string" && v !== "")) {
      return { ok: false, error: "must list non-empty strings" };
    }
    return { ok: true, matcher: { kind: "exact", values: raw as string[] } };
  }
  return { ok: false, error: 'must be a string ("*", "prefix*", "value") or a list of strings' };
}

/**
 * True when `value` (undefined = absent) satisfies `matcher`.
 *
 * @example
 * matchesValue({ kind: "prefix", prefix: "/v1/" }, "/v1/pay"); // true
 */
export function matchesValue(matcher: ValueMatcher, value: string | undefined): boolean {
  if (value === undefined) return false;
  if (matcher.kind === "present") return true;
  if (matcher.kind === "prefix") return value.startsWith(matcher.prefix);
  return matcher.values.includes(value);
}

// ---------------------------------------------------------------- key rendering

// Kept as-is in keys: readable for IPs, ids and routes, and none of them is structural
// (`:` separates key parts, `{}` is the cluster hash tag, `%` escapes, `~` marks a hash).
const SAFE_BYTE = /^[A-Za-z0-9._\-/@+=]$/;
const encoder = new TextEncoder();

/** Char codes kept as-is (SAFE_BYTE), as a lookup table: this runs on every request. */
const SAFE_CODES = Uint8Array.from({ length: 128 }, (_, code) =>
  SAFE_BYTE.test(String.fromCharCode(code)) ? 1 : 0,
);

function percentEscape(value: string): string {
  // Fast path: nothing to escape (ids, IPv4, routes) — the string itself.
  let safe = true;
  for (let i = 0; i < value.length && safe; i++) {
    const code = value.charCodeAt(i);
    safe = code < 0x80 && SAFE_CODES[code] === 1;
  }
  if (safe) return value;
  let out = "";
  for (const byte of encoder.encode(value)) {
    const ch = String.fromCharCode(byte);
    out += byte < 0x80 && SAFE_BYTE.test(ch) ? ch : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

function shortHash(value: string): string {
  // 64 bits: a collision between two live values of one policy is ~n²/2^65, negligible at 50M keys.
  return createHash("sha256").update(value).digest("hex").slice(0, 16);
}

/**
 * Makes one descriptor value safe inside a Redis key: structural characters are
 * percent-escaped, and a value longer than `maxValueChars` once escaped keeps a
 * readable prefix plus `~` and a 64-bit hash of the whole value. Secrets are always
 * replaced by `~<hash>`. Injective (up to hash collisions): distinct values never
 * share a counter.
 *
 * @example
 * encodeKeyValue("a:b{c}", { maxValueChars: 64 }); // "a%3Ab%7Bc%7D"
 */
export function encodeKeyValue(value: string, options: { maxValueChars: number; secret?: boolean }): string {
  const max = Math.min(MAX_VALUE_CHARS, Math.max(MIN_VALUE_CHARS, options.maxValueChars));
  if (options.secret === true) return `~${shortHash(value)}`;
  const escaped = percentEscape(
    value.length > MAX_RAW_VALUE_CHARS ? value.slice(0, MAX_RAW_VALUE_CHARS) : value,
  );
  if (escaped.length <= max && value.length <= MAX_RAW_VALUE_CHARS) return escaped;
  const digest = shortHash(value);
  let keep = escaped.slice(0, max - digest.length - 1);
  // A cut inside "%XY" would leave a dangling escape; drop it so the prefix stays decodable.
  const pct = keep.lastIndexOf("%");
  if (pct !== -1 && pct > keep.length - 3) keep = keep.slice(0, pct);
  return `${keep}~${digest}`;
}

/** A parsed key template: literal text and descriptor placeholders. */
export interface KeyTemplate {
  readonly source: string;
  readonly parts: readonly ({ readonly literal: string } | { readonly key: DescriptorKey })[];
  /** Descriptor keys the template needs; the policy applies only when all are present. */
  readonly keys: readonly DescriptorKey[];
}

const LITERAL = /^[A-Za-z0-9._\-:/]*$/;

/**
 * Parses `user:{user}:route:{route}`: literals may hold `[A-Za-z0-9._-:/]`, placeholders
 * name descriptor keys. Returns an error text naming the problem.
 *
 * @example
 * parseKeyTemplate("ip:{ip}"); // { ok: true, template: { keys: ["ip"], ... } }
 */
export function parseKeyTemplate(
  source: string,
): { ok: true; template: KeyTemplate } | { ok: false; error: string } {
  if (source === "" || source.length > MAX_TEMPLATE_CHARS) {
    return { ok: false, error: `must be 1..${MAX_TEMPLATE_CHARS} characters` };
  }
  const parts: ({ literal: string } | { key: DescriptorKey })[] = [];
  const keys: DescriptorKey[] = [];
  const pattern = /\{([^{}]*)\}/g;
  let last = 0;
  for (const found of source.matchAll(pattern)) {
    const literal = source.slice(last, found.index);
    if (!LITERAL.test(literal))
      return { ok: false, error: `literal "${literal}" has a character outside [A-Za-z0-9._-:/]` };
    if (literal !== "") parts.push({ literal });
    const name = found[1]!;
    if (!isDescriptorKey(name))
      return { ok: false, error: `{${name}} is not a descriptor key (${DESCRIPTOR_KEYS.join(", ")})` };
    parts.push({ key: name });
    if (!keys.includes(name)) keys.push(name);
    last = found.index + found[0].length;
  }
  const tail = source.slice(last);
  if (!LITERAL.test(tail))
    return { ok: false, error: `literal "${tail}" has a character outside [A-Za-z0-9._-:/]` };
  if (tail !== "") parts.push({ literal: tail });
  return { ok: true, template: { source, parts, keys } };
}

/**
 * Renders `template` with the descriptor's values, each escaped and bounded by
 * `encodeKeyValue`; undefined when a needed value is absent.
 *
 * @example
 * renderKeyTemplate(template, descriptor({ user: "42" }), { maxValueChars: 64 }); // "user:42"
 */
export function renderKeyTemplate(
  template: KeyTemplate,
  d: Descriptor,
  options: { maxValueChars: number },
): string | undefined {
  let out = "";
  for (const part of template.parts) {
    if ("literal" in part) {
      out += part.literal;
      continue;
    }
    const value = descriptorValue(d, part.key);
    if (value === undefined) return undefined;
    out += encodeKeyValue(value, {
      maxValueChars: options.maxValueChars,
      secret: SECRET_DESCRIPTOR_KEYS.has(part.key),
    });
  }
  return out;
}
