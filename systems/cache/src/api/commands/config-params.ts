/**
 * The settings CONFIG GET and CONFIG SET see. The memory ones (maxmemory, policy,
 * samples, LFU tuning) change the keyspace at runtime, as in Redis; the rest answer
 * what tools probe — redis-benchmark asks `save` and `appendonly` on start — with this
 * node's truth: no persistence (the database is the source of truth, seed 004), one
 * database, fixed port.
 *
 * @example
 * const params = createConfigParams(keyspace, settings);
 * params.get("maxmemory")!.get(); // "268435456"
 */

import type { AclUsers } from "../../domain/acl-users.ts";
import { isEvictionPolicyName } from "../../domain/eviction-policy.ts";
import { parseInt64 } from "../../domain/integer-arg.ts";
import type { Keyspace } from "../../domain/keyspace.ts";
import { MAX_EVICTION_SAMPLES } from "../../domain/keyspace.ts";
import { parseMemorySize } from "../../domain/memory-size.ts";
import type { RespLimits } from "../resp-parser.ts";
import type { ConfigParam } from "./command-spec.ts";

/** Node settings outside the keyspace that CONFIG reads (and, for maxclients, writes). */
export interface NodeSettings {
  maxClients: number;
  /** The bound port (known after listen). */
  port: number;
  readonly host: string;
  /** Server cron frequency: the active expiry cycle runs hz times a second. */
  readonly hz: number;
  readonly limits: RespLimits;
}

const MAX_INT = 2 ** 31 - 1;
/**
 * Redis's order in its error message, kept so the text matches redis-server's reply for reply
 * (commands-conformance); this node's own allkeys-w-tinylfu is accepted but not listed.
 */
const POLICY_LIST =
  "volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction";

function intInRange(min: number, max: number) {
  return (value: string): string | undefined => {
    const parsed = parseInt64(value);
    return typeof parsed === "number" && parsed >= min && parsed <= max
      ? undefined
      : `argument must be between ${min} and ${max} inclusive`;
  };
}

function fixed(name: string, value: () => string): ConfigParam {
  return { name, get: value };
}

/** A setting that only accepts its one value (no persistence here, so `save ""` and `appendonly no`). */
function pinned(name: string, value: string, why: string): ConfigParam {
  return {
    name,
    get: () => value,
    validate: (next) => (next.toLowerCase() === value ? undefined : why),
    apply: () => {},
  };
}

function memoryParams(keyspace: Keyspace): ConfigParam[] {
  return [
    {
      name: "maxmemory",
      get: () => String(keyspace.maxmemoryBytes),
      validate: (v) => (parseMemorySize(v) === undefined ? "argument must be a memory value" : undefined),
      apply: (v) => keyspace.configure({ maxmemoryBytes: parseMemorySize(v)! }),
    },
    {
      name: "maxmemory-policy",
      get: () => keyspace.policy,
      validate: (v) =>
        isEvictionPolicyName(v.toLowerCase())
          ? undefined
          : `argument(s) must be one of the following: ${POLICY_LIST}`,
      apply: (v) => {
        const policy = v.toLowerCase();
        if (isEvictionPolicyName(policy)) keyspace.configure({ policy });
      },
    },
    {
      name: "maxmemory-samples",
      get: () => String(keyspace.samples),
      validate: intInRange(1, MAX_EVICTION_SAMPLES),
      apply: (v) => keyspace.configure({ samples: Number(v) }),
    },
    {
      name: "lfu-log-factor",
      get: () => String(keyspace.lfu.logFactor),
      validate: intInRange(0, MAX_INT),
      apply: (v) => keyspace.configure({ lfu: { ...keyspace.lfu, logFactor: Number(v) } }),
    },
    {
      name: "lfu-decay-time",
      get: () => String(keyspace.lfu.decayTimeMin),
      validate: intInRange(0, MAX_INT),
      apply: (v) => keyspace.configure({ lfu: { ...keyspace.lfu, decayTimeMin: Number(v) } }),
    },
  ];
}

/**
 * requirepass is the default user's one password (Redis 6+). CONFIG SET applies it to new
 * AUTHs at once ("" = nopass again). CONFIG GET cannot echo it: only its SHA-256 is kept,
 * so it answers "" when there is none and a placeholder when there is one (Redis echoes the
 * password: a deliberate difference, in commands-own).
 */
function requirepassParam(acl: AclUsers): ConfigParam {
  return {
    name: "requirepass",
    get: () => (acl.default.noPass ? "" : REQUIREPASS_HIDDEN),
    validate: () => undefined,
    apply: (v) => {
      acl.setUser("default", v === "" ? ["nopass"] : ["resetpass", `>${v}`]);
    },
  };
}

/** What CONFIG GET requirepass answers when a password is set. */
export const REQUIREPASS_HIDDEN = "(set; stored as a SHA-256 hash)";

/** Every CONFIG parameter by name. */
export function createConfigParams(
  keyspace: Keyspace,
  settings: NodeSettings,
  acl: AclUsers,
): Map<string, ConfigParam> {
  const params: ConfigParam[] = [
    ...memoryParams(keyspace),
    requirepassParam(acl),
    {
      name: "maxclients",
      get: () => String(settings.maxClients),
      validate: intInRange(1, MAX_INT),
      apply: (v) => {
        settings.maxClients = Number(v);
      },
    },
    pinned("save", "", "this node has no persistence: the database is the source of truth"),
    pinned("appendonly", "no", "this node has no persistence: the database is the source of truth"),
    fixed("port", () => String(settings.port)),
    fixed("bind", () => settings.host),
    fixed("databases", () => "1"),
    fixed("hz", () => String(settings.hz)),
    fixed("timeout", () => "0"),
    fixed("cluster-enabled", () => "no"),
    fixed("maxmemory-eviction-tenacity", () => "10"),
    fixed("proto-max-bulk-len", () => String(settings.limits.maxBulkBytes)),
    fixed("client-query-buffer-limit", () => String(settings.limits.maxQueryBytes)),
  ];
  return new Map(params.map((param) => [param.name, param]));
}
