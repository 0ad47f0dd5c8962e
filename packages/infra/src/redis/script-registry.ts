/**
 * A system's Lua scripts, loaded once from its `store/scripts/` folder and run by
 * name. Calls go out as EVALSHA (40 bytes instead of the script text); when Redis
 * answers NOSCRIPT (restart, failover, SCRIPT FLUSH) the call is re-sent as EVAL,
 * which runs it and caches it again. NOSCRIPT means the script did not run, so the
 * fallback can never apply a call twice.
 *
 * Cluster note: a script runs on one node, so all its KEYS must share a slot. Give
 * keys used together one hash tag (`{tenant42}`); with `clusterSlots: true` every
 * call is checked (after the connection's keyPrefix) and a cross-slot call fails
 * here, on a single dev Redis, instead of with CROSSSLOT in production (both surface
 * as REDIS_SCRIPT_CROSS_SLOT). A script must also touch ONLY the keys passed in KEYS:
 * keys built inside Lua bypass both checks, and a cluster node refuses them only when
 * they live on ANOTHER node ("Script attempted to access a non local key"; Redis 7.0
 * lets a key of another slot on the same node through), so they break at random.
 *
 * Scripts may share code through includes (`--- @include "name"` lines, inlined from an
 * `includes/` folder beside the scripts when they load; see `script-includes.ts`).
 *
 * Every method takes a `Redis` or a `Cluster` client. On a cluster, `loadAll` loads
 * each script on every node, and `runBatch` cannot be one pipeline (a pipeline is
 * bound to one node, and its calls' slots differ): each call is its own EVALSHA,
 * sent concurrently, and auto-pipelining (if enabled) coalesces those bound for one
 * node into one write.
 *
 * @example
 * const registry = await ScriptRegistry.fromDir(new URL("./scripts/", import.meta.url));
 * const [allowed] = (await registry.run(redis, "take-token", ["rl:{u1}"], [10, 5])) as number[];
 */
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { sameSlot } from "@casebook/kit/cluster-slot";
import type { CasebookError } from "@casebook/kit/errors";
import type { Redis } from "ioredis";
import { isClusterClient, type RedisClient } from "./connect-redis.ts";
import { redisErrors } from "./redis-errors.ts";
import { checkCall, parseScript, type ScriptArg, type ScriptSource } from "./script-contract.ts";
import { loadIncludes } from "./script-includes.ts";

/** One call in a batch. */
export interface ScriptCall {
  name: string;
  keys: string[];
  args: ScriptArg[];
}

export interface ScriptRegistryOptions {
  /** Bound on calls per pipelined batch; a bigger batch is refused, split it. Default 1 000. */
  maxBatch?: number;
  /** Check that each call's keys (with the connection's keyPrefix) share one cluster slot. */
  clusterSlots?: boolean;
  /** Where `fromDir` reads includes from; default `<dir>/includes/` (a missing folder holds none). */
  includesDir?: string | URL;
}

export const defaultMaxBatch = 1_000;

/** Bound on script files read from one folder: a system with more scripts than this has a design problem. */
export const maxScriptsPerDir = 256;

/** Redis refused the command because of its own state: the script did not run. */
const NOT_RUN_REPLY = /^(LOADING|BUSY|READONLY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|NOREPLICAS|OOM|MOVED|ASK)\b/;

export class ScriptRegistry {
  readonly #scripts = new Map<string, ScriptSource>();
  readonly #maxBatch: number;
  readonly #clusterSlots: boolean;

  constructor(scripts: readonly ScriptSource[], options: ScriptRegistryOptions = {}) {
    for (const script of scripts) {
      const existing = this.#scripts.get(script.name);
      if (existing) {
        throw redisErrors.create("REDIS_SCRIPT_INVALID", {
          detail: `${script.file} and ${existing.file} both define script "${script.name}"; names must be unique.`,
          fields: { file: script.file },
        });
      }
      this.#scripts.set(script.name, script);
    }
    this.#maxBatch = options.maxBatch ?? defaultMaxBatch;
    this.#clusterSlots = options.clusterSlots ?? false;
  }

  /**
   * Loads every `*.lua` file of `dir` (other files and folders are ignored), its includes
   * inlined from `options.includesDir`; fails on the first invalid one.
   */
  static async fromDir(dir: string | URL, options: ScriptRegistryOptions = {}): Promise<ScriptRegistry> {
    const path = typeof dir === "string" ? dir : fileURLToPath(dir);
    const includes = await loadIncludes(options.includesDir ?? `${path}/includes`);
    const files = (await readdir(path)).filter((file) => file.endsWith(".lua")).sort();
    if (files.length > maxScriptsPerDir) {
      throw redisErrors.create("REDIS_SCRIPT_INVALID", {
        detail: `${path} holds ${files.length} scripts; the bound is ${maxScriptsPerDir}.`,
      });
    }
    const scripts = await Promise.all(
      files.map(async (file) => parseScript(file, await readFile(`${path}/${file}`, "utf8"), includes)),
    );
    return new ScriptRegistry(scripts, options);
  }

  /** Bound on calls per batch, shared by both runners so a batch that works embedded works on Redis. */
  get maxBatch(): number {
    return this.#maxBatch;
  }

  names(): string[] {
    return [...this.#scripts.keys()].sort();
  }

  /** The script registered as `name`; throws REDIS_SCRIPT_UNKNOWN listing the known names. */
  get(name: string): ScriptSource {
    const script = this.#scripts.get(name);
    if (!script) {
      throw redisErrors.create("REDIS_SCRIPT_UNKNOWN", {
        detail: `No script "${name}"; known: ${this.names().join(", ") || "(none)"}.`,
        fields: { script: name },
      });
    }
    return script;
  }

  /** Validates a call (name, arity, finite numbers) and returns the script and its ARGV strings. */
  prepare(
    name: string,
    keys: readonly string[],
    args: readonly ScriptArg[],
  ): { script: ScriptSource; argv: string[] } {
    const script = this.get(name);
    return { script, argv: checkCall(script, keys, args) };
  }

  /** SCRIPT LOAD every script: optional warm-up at start, so the first calls skip the EVAL fallback. */
  async loadAll(redis: RedisClient): Promise<void> {
    // SCRIPT LOAD carries no key: on a cluster it must go to each node (replicas too, so a
    // promoted replica has them; a node added later answers NOSCRIPT and gets EVAL once).
    const targets: Redis[] = isClusterClient(redis) ? redis.nodes("all") : [redis];
    for (const target of targets) {
      for (const script of this.#scripts.values()) {
        const sha1 = String(await target.script("LOAD", script.lua));
        if (sha1 !== script.sha1) throw new Error(`SHA1 mismatch for ${script.file}: Redis says ${sha1}`);
      }
    }
  }

  /** Runs one script atomically: EVALSHA, then EVAL on NOSCRIPT. Rejects with a REDIS_* error. */
  async run(
    redis: RedisClient,
    name: string,
    keys: readonly string[],
    args: readonly ScriptArg[],
  ): Promise<unknown> {
    const { script, argv } = this.prepare(name, keys, args);
    this.checkSlots(name, keys, String(redis.options.keyPrefix ?? ""));
    try {
      try {
        return await redis.evalsha(script.sha1, keys.length, ...keys, ...argv);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return await redis.eval(script.lua, keys.length, ...keys, ...argv);
      }
    } catch (error) {
      throw toRedisError(name, error);
    }
  }

  /**
   * Sends many calls in one round trip (a pipeline). Each call is atomic; the batch is
   * NOT (that is MULTI's job, or one bigger script's). Calls that met NOSCRIPT did not run
   * and are re-sent as EVAL after the rest of the batch, so a batch whose calls depend on
   * each other's ORDER must be one script instead. Results come back in call order.
   *
   * @example
   * const results = await registry.runBatch(redis, users.map((u) => ({ name: "take-token", keys: [u], args: [10, 5] })));
   */
  async runBatch(redis: RedisClient, calls: readonly ScriptCall[]): Promise<PromiseSettledResult<unknown>[]> {
    this.checkBatch(calls.length);
    const prefix = String(redis.options.keyPrefix ?? "");
    const prepared = calls.map((call) => {
      this.checkSlots(call.name, call.keys, prefix);
      return { call, ...this.prepare(call.name, call.keys, call.args) };
    });
    if (isClusterClient(redis)) {
      // Validated above, so a malformed call still refuses the whole batch before any runs.
      return Promise.allSettled(calls.map((call) => this.run(redis, call.name, call.keys, call.args)));
    }
    const first = await execPipeline(redis, prepared, "evalsha");
    const retry = prepared.filter((_, index) => isNoScript(first[index]?.[0]));
    const second = retry.length > 0 ? await execPipeline(redis, retry, "eval") : [];
    let retried = 0;
    return prepared.map(({ call }, index) => {
      const [error, value] = isNoScript(first[index]?.[0]) ? second[retried++]! : first[index]!;
      return error
        ? { status: "rejected", reason: toRedisError(call.name, error) }
        : { status: "fulfilled", value };
    });
  }

  /** Throws REDIS_BATCH_TOO_LARGE when a batch exceeds `maxBatch`. */
  checkBatch(size: number): void {
    if (size <= this.#maxBatch) return;
    throw redisErrors.create("REDIS_BATCH_TOO_LARGE", {
      detail: `A batch of ${size} calls exceeds maxBatch ${this.#maxBatch}; split it.`,
      fields: { calls: size, maxBatch: this.#maxBatch },
    });
  }

  /** With `clusterSlots`, throws REDIS_SCRIPT_CROSS_SLOT unless `prefix + key` share one slot for all keys. */
  checkSlots(name: string, keys: readonly string[], prefix = ""): void {
    if (!this.#clusterSlots) return;
    if (sameSlot(keys.map((key) => prefix + key))) return;
    throw redisErrors.create("REDIS_SCRIPT_CROSS_SLOT", {
      detail: `${name}: keys ${keys.join(", ")} hash to different cluster slots; give them one {hash tag}.`,
      fields: { script: name, keys },
    });
  }
}

type PipelineResult = [Error | null, unknown];

async function execPipeline(
  redis: Redis,
  prepared: readonly { call: ScriptCall; script: ScriptSource; argv: string[] }[],
  mode: "evalsha" | "eval",
): Promise<PipelineResult[]> {
  const pipeline = redis.pipeline();
  for (const { call, script, argv } of prepared) {
    if (mode === "evalsha") pipeline.evalsha(script.sha1, call.keys.length, ...call.keys, ...argv);
    else pipeline.eval(script.lua, call.keys.length, ...call.keys, ...argv);
  }
  let results: PipelineResult[] | null;
  try {
    results = (await pipeline.exec()) as PipelineResult[] | null;
  } catch (error) {
    // The whole batch failed to go out (connection down): no call ran, each gets the error.
    return prepared.map(() => [error instanceof Error ? error : new Error(String(error)), undefined]);
  }
  if (!results || results.length !== prepared.length) {
    const error = new Error(
      `pipeline returned ${results?.length ?? "no"} results for ${prepared.length} calls`,
    );
    return prepared.map(() => [error, undefined]);
  }
  return results;
}

/**
 * REDIS_SCRIPT_FAILED for a script's error reply, on either engine. `replyCode` is the
 * reply's first word (`WRONGTYPE`, `ERR`, or the script's own `SOLD_OUT`), the stable
 * part a caller may branch on; Redis appends script ids and line numbers after it.
 */
export function scriptFailed(script: string, reply: string, cause?: unknown): CasebookError {
  return redisErrors.create("REDIS_SCRIPT_FAILED", {
    detail: `${script}: ${reply}`,
    fields: { script, reply, replyCode: reply.split(/\s/, 1)[0] },
    cause,
  });
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
}

/**
 * Maps an ioredis failure to the layer's codes: a script's own error reply is
 * REDIS_SCRIPT_FAILED (with `reply`), a reply saying Redis refused to run anything is
 * REDIS_UNAVAILABLE, a missing reply is REDIS_TIMEOUT, anything else never reached Redis.
 */
export function toRedisError(script: string, error: unknown): CasebookError {
  if (redisErrors.is(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const isReply = error instanceof Error && error.name === "ReplyError";
  if (isReply && message.startsWith("CROSSSLOT")) {
    // The cluster refused it before running anything: the same fault clusterSlots catches locally.
    return redisErrors.create("REDIS_SCRIPT_CROSS_SLOT", {
      detail: `${script}: ${message}`,
      fields: { script, reply: message },
      cause: error,
    });
  }
  if (isReply && !NOT_RUN_REPLY.test(message)) {
    return scriptFailed(script, message, error);
  }
  if (message === "Command timed out") {
    return redisErrors.create("REDIS_TIMEOUT", { fields: { script }, cause: error });
  }
  return redisErrors.create("REDIS_UNAVAILABLE", {
    detail: `Redis did not run ${script}: ${message}`,
    fields: { script, reply: isReply ? message : undefined },
    cause: error,
  });
}
