/**
 * Reading an Envoy RateLimitRequest: bounds, descriptor-key aliases, and parsing into
 * our descriptors with a problem text naming the field at fault (INVALID_ARGUMENT).
 */
import {
  type Descriptor,
  type DescriptorKey,
  descriptor,
  isDescriptorKey,
  MAX_RAW_VALUE_CHARS,
} from "../domain/descriptors.ts";
import type { RlsDescriptor, RlsRequest } from "./envoy-rls-wire.ts";

// ---------------------------------------------------------------- bounds and options

/** Bounds on one request: Envoy sends a handful of short descriptors; more is abuse or a bug. */
export const envoyRlsBounds = {
  maxDescriptors: 64,
  maxEntriesPerDescriptor: 16,
  maxKeyChars: 256,
  maxValueChars: MAX_RAW_VALUE_CHARS,
} as const;

/**
 * Envoy's built-in descriptor keys and what they mean here. `remote_address` and
 * `masked_remote_address` (a CIDR) are the client address; `generic_key` (a fixed
 * label set on an Envoy route) names a route group; `header_match` (a label set when
 * request headers match) classes the client, like a plan. Any Envoy action can
 * instead set `descriptor_key` to one of our keys directly.
 */
export const ENVOY_KEY_ALIASES: Readonly<Record<string, DescriptorKey>> = {
  remote_address: "ip",
  masked_remote_address: "ip",
  generic_key: "route",
  header_match: "plan",
};

// ---------------------------------------------------------------- request parsing

export interface ParsedDescriptor {
  /** Undefined when the descriptor cannot match any policy (unknown or repeated key, empty value). */
  readonly descriptor: Descriptor | undefined;
  readonly keys: ReadonlySet<DescriptorKey>;
  /** Units to spend; undefined = each policy's own cost; 0 = check only. */
  readonly hits: number | undefined;
  readonly why?: string;
}

export interface ParsedRequest {
  readonly domain: string;
  readonly descriptors: readonly ParsedDescriptor[];
}

type Parse = { ok: true; request: ParsedRequest } | { ok: false; problem: string };

function parseHits(raw: RlsDescriptor): { hits?: number; problem?: string } {
  const wrapper = raw.hits_addend;
  if (wrapper === undefined || wrapper === null) return {};
  const text = wrapper.value ?? "0";
  // uint64 arrives as a decimal string; past 2^53 precision is lost, but any such count
  // is far above every policy's burst and is refused the same.
  const hits = Number(text);
  if (!/^\d+$/.test(text) || !Number.isFinite(hits))
    return { problem: `hits_addend ${text} is not a uint64` };
  return { hits };
}

function parseDescriptor(
  raw: RlsDescriptor,
  path: string,
  aliases: Readonly<Record<string, DescriptorKey>>,
  requestHits: number | undefined,
): ParsedDescriptor | string {
  const { maxEntriesPerDescriptor, maxKeyChars, maxValueChars } = envoyRlsBounds;
  const entries = raw.entries ?? [];
  if (entries.length === 0 || entries.length > maxEntriesPerDescriptor)
    return `${path}.entries: must hold 1..${maxEntriesPerDescriptor} entries`;
  const hits = parseHits(raw);
  if (hits.problem) return `${path}.${hits.problem}`;
  const values: Partial<Record<DescriptorKey, string>> = {};
  let why: string | undefined;
  for (const [j, entry] of entries.entries()) {
    const key = entry.key ?? "";
    const value = entry.value ?? "";
    if (key === "" || key.length > maxKeyChars)
      return `${path}.entries[${j}].key: must be 1..${maxKeyChars} chars`;
    if (value.length > maxValueChars)
      return `${path}.entries[${j}].value: longer than ${maxValueChars} chars`;
    const ours = Object.hasOwn(aliases, key) ? aliases[key] : isDescriptorKey(key) ? key : undefined;
    if (ours === undefined) why ??= `unknown key ${key}`;
    else if (value === "") why ??= `empty value for ${key}`;
    else if (values[ours] !== undefined) why ??= `${ours} given twice`;
    else values[ours] = value;
  }
  const keys = new Set(Object.keys(values) as DescriptorKey[]);
  return { descriptor: why ? undefined : descriptor(values), keys, hits: hits.hits ?? requestHits, why };
}

/**
 * Validates a decoded RateLimitRequest; `problem` names the field at fault
 * (answered as INVALID_ARGUMENT).
 *
 * @example
 * parseRlsRequest({ domain: "casebook", descriptors: [{ entries: [{ key: "remote_address", value: "10.0.0.1" }] }] }, ENVOY_KEY_ALIASES);
 */
export function parseRlsRequest(raw: RlsRequest, aliases: Readonly<Record<string, DescriptorKey>>): Parse {
  const domain = raw.domain ?? "";
  if (domain === "") return { ok: false, problem: "domain: must not be empty" };
  const list = raw.descriptors ?? [];
  if (list.length === 0 || list.length > envoyRlsBounds.maxDescriptors)
    return { ok: false, problem: `descriptors: must hold 1..${envoyRlsBounds.maxDescriptors} descriptors` };
  const requestHits = raw.hits_addend ? raw.hits_addend : undefined;
  const descriptors: ParsedDescriptor[] = [];
  for (const [i, item] of list.entries()) {
    const parsed = parseDescriptor(item, `descriptors[${i}]`, aliases, requestHits);
    if (typeof parsed === "string") return { ok: false, problem: parsed };
    descriptors.push(parsed);
  }
  return { ok: true, request: { domain, descriptors } };
}
