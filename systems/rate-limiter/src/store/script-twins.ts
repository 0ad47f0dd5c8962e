/**
 * The in-process twins of src/store/scripts/<algorithm>-n.lua: the same call
 * contract (ARGV[1] spend|refund|each, then one stride of parameters per key), the same
 * reply, the same stored state and TTL, computed by the domain functions the Lua
 * mirrors. lua-conformance.test.ts proves Lua ≡ domain; the store contract suite
 * runs the same cases on both engines, so Lua ≡ twin.
 *
 * A twin runs synchronously inside InProcessScriptRunner: atomic, like a script.
 */
import type { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import type { LuaReply } from "@casebook/infra/redis/lua-reply";
import type { ScriptTwin } from "@casebook/infra/redis/script-runner";
import {
  type Algorithm,
  type AlgorithmName,
  algorithmNames,
  decideAll,
  type KeyCall,
  type Limit,
  limitBounds,
  type StoredState,
  validateCall,
  validateRequestId,
} from "../domain/algorithm.ts";
import { algorithms } from "../domain/algorithms.ts";

/** The two limit fields each script takes before `cost`, in ARGV order. */
const limitFields: Record<AlgorithmName, readonly [string, string]> = {
  "token-bucket": ["capacity", "ratePerS"],
  "fixed-window": ["limit", "windowMs"],
  "sliding-window-log": ["limit", "windowMs"],
  "sliding-window-counter": ["limit", "windowMs"],
  "leaky-bucket": ["queueCapacity", "ratePerS"],
  gcra: ["burst", "ratePerS"],
};

function readStored(keyspace: InProcessKeyspace, key: string, kind: StoredState["kind"]): StoredState {
  // The compact string's old format is a hash: read it as such (the algorithm reads both).
  if (kind === "string" && keyspace.type(key) !== "hash") {
    // PEXPIRETIME: time is frozen inside the twin's atomic call, so now + PTTL is exact.
    const pttl = keyspace.pttl(key);
    const expiresAtMs = pttl >= 0 ? keyspace.nowMs() + pttl : undefined;
    return { kind: "string", value: keyspace.get(key) ?? undefined, expiresAtMs };
  }
  if (kind === "zset") {
    const entries = keyspace.zrange(key, 0, -1).map((member) => ({
      member,
      score: String(keyspace.zscore(key, member)),
    }));
    return { kind: "zset", entries };
  }
  return { kind: "hash", fields: keyspace.hgetall(key) };
}

/**
 * The sliding log is a sorted set (one member per unit); the token bucket and the fixed window
 * are an integer whose key's expiry carries the state's instant (stored-timed.ts); every other
 * state is a hash.
 */
export function storedKind(name: AlgorithmName): StoredState["kind"] {
  if (name === "sliding-window-log") return "zset";
  return name === "token-bucket" || name === "fixed-window" ? "string" : "hash";
}

/**
 * Key `key`'s state, as the scripts' readTimed does it: a key still in an older format (a hash,
 * or the string "a:b", where the algorithm now stores an integer whose key's expiry carries its
 * instant) is rewritten at once in the current one, expiring at that instant + the span, or
 * deleted when that has passed.
 */
function readState<L extends Limit, S>(
  name: AlgorithmName,
  algorithm: Algorithm<L, S>,
  keyspace: InProcessKeyspace,
  key: string,
  limit: L,
): S | undefined {
  const kind = storedKind(name);
  const stored = readStored(keyspace, key, kind);
  const state = algorithm.fromStored(stored, limit);
  if (state === undefined) return state;
  const current = algorithm.toStored(state, limit);
  if (current.kind !== "string" || current.value === undefined || current.expiresAtMs === undefined)
    return state;
  if (
    stored.kind === "string" &&
    stored.value === current.value &&
    stored.expiresAtMs === current.expiresAtMs
  ) {
    return state; // already in the current format
  }
  const ttlMs = current.expiresAtMs - keyspace.nowMs();
  if (ttlMs > 0) keyspace.set(key, current.value, { pxMs: ttlMs });
  else keyspace.del(key);
  return state;
}

function writeStored(keyspace: InProcessKeyspace, key: string, stored: StoredState, ttlMs: number): void {
  if (stored.kind === "string") {
    if (stored.value === undefined) keyspace.del(key);
    else keyspace.set(key, stored.value, { pxMs: ttlMs });
    return;
  }
  keyspace.del(key);
  if (stored.kind === "hash") keyspace.hset(key, { ...stored.fields });
  else for (const entry of stored.entries) keyspace.zadd(key, Number(entry.score), entry.member);
  if (keyspace.exists(key)) keyspace.pexpire(key, ttlMs);
}

/** Key i's limit, cost and request id, from its ARGV stride (argv[0] is the mode). */
function parseCall<L extends Limit, S>(
  name: AlgorithmName,
  algorithm: Algorithm<L, S>,
  argv: readonly string[],
  i: number,
): { limit: L; cost: number; requestId: string | undefined } {
  const [first, second] = limitFields[name];
  const at = 1 + i * algorithm.argvStride;
  const limit = {
    algorithm: name,
    [first]: Number(argv[at]),
    [second]: Number(argv[at + 1]),
  } as unknown as L;
  const requestId = algorithm.argvStride === 4 ? argv[at + 3] : undefined;
  return { limit, cost: Number(argv[at + 2]), requestId };
}

function parseCalls<L extends Limit, S>(
  name: AlgorithmName,
  algorithm: Algorithm<L, S>,
  keyspace: InProcessKeyspace,
  keys: readonly string[],
  argv: readonly string[],
): KeyCall<L, S>[] {
  return keys.map((key, i) => {
    const call = parseCall(name, algorithm, argv, i);
    return { state: readState(name, algorithm, keyspace, key, call.limit), ...call };
  });
}

/**
 * Mode "each": read, decide, write one key at a time in order, as the script does, so a
 * repeated key sees the write before it (decideEach in the domain threads state the same
 * way). Every call is validated first: a malformed batch writes nothing. A throw later (a
 * reused request id) stops the batch there with the keys before it written, like the script.
 */
function decideEachInPlace<L extends Limit, S>(
  name: AlgorithmName,
  algorithm: Algorithm<L, S>,
  keyspace: InProcessKeyspace,
  keys: readonly string[],
  argv: readonly string[],
  nowMs: number,
): number[] {
  const max = limitBounds.maxCallsPerEach;
  if (keys.length > max) throw new RangeError(`calls.length must be at most ${max}, got ${keys.length}`);
  const calls = keys.map((_, i) => parseCall(name, algorithm, argv, i));
  for (const call of calls) {
    validateCall(call.limit, nowMs, call.cost);
    if (algorithm.argvStride === 4) validateRequestId(call.requestId);
  }
  const reply = [0, nowMs, 0, 0];
  calls.forEach((call, i) => {
    const key = keys[i]!;
    const state = readState(name, algorithm, keyspace, key, call.limit);
    const d = algorithm.decide(state, nowMs, call.limit, call.cost, call.requestId);
    if (d.allowed) {
      writeStored(keyspace, key, algorithm.toStored(d.state, call.limit), d.ttlMs);
      reply[0]!++;
    }
    reply.push(d.allowed ? 1 : 0, d.remaining, d.resetMs, d.retryAfterMs, d.delayMs);
  });
  return reply;
}

function twinOf<L extends Limit, S>(name: AlgorithmName, algorithm: Algorithm<L, S>): ScriptTwin {
  return (keyspace, keys, argv): LuaReply => {
    const mode = argv[0];
    const known = mode === "spend" || mode === "refund" || mode === "each";
    if (!known || argv.length !== 1 + algorithm.argvStride * keys.length) {
      return { err: `ERR usage: ARGV[1] spend|refund|each, then ${algorithm.argvStride} values per key` };
    }
    const [seconds, micros] = keyspace.time();
    const nowMs = seconds * 1000 + Math.floor(micros / 1000);
    try {
      if (mode === "each") return decideEachInPlace(name, algorithm, keyspace, keys, argv, nowMs);
      const calls = parseCalls(name, algorithm, keyspace, keys, argv);
      if (mode === "refund") {
        calls.forEach((call, i) => {
          const state = algorithm.refund(call.state, nowMs, call.limit, call.cost, call.requestId);
          writeStored(
            keyspace,
            keys[i]!,
            algorithm.toStored(state, call.limit),
            algorithm.ttlMs(state, nowMs, call.limit),
          );
        });
        return [1, nowMs, 0, 0];
      }
      const outcome = decideAll(algorithm, nowMs, calls);
      if (outcome.allowed) {
        outcome.decisions.forEach((decision, i) => {
          writeStored(
            keyspace,
            keys[i]!,
            algorithm.toStored(decision.state, calls[i]!.limit),
            decision.ttlMs,
          );
        });
      }
      const perKey = outcome.decisions.flatMap((d) => [d.allowed ? 1 : 0, d.remaining, d.resetMs]);
      return [outcome.allowed ? 1 : 0, nowMs, outcome.retryAfterMs, outcome.delayMs, ...perKey];
    } catch (error) {
      return { err: `ERR ${(error as Error).message}` };
    }
  };
}

/** Twins by script name (`token-bucket`, …), for InProcessScriptRunner. */
export const scriptTwins: Readonly<Record<string, ScriptTwin>> = Object.fromEntries(
  algorithmNames.map((name) => [name, twinOf(name, algorithms[name] as Algorithm<Limit, unknown>)]),
);
