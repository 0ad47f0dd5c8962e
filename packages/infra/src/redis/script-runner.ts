/**
 * THE TWIN RULE. Every Redis script has a TypeScript twin with the same atomic
 * semantics, and system code only ever sees `ScriptRunner`: on Redis the script
 * runs (`RedisScriptRunner`), embedded the twin runs against an in-process
 * keyspace (`InProcessScriptRunner`). One contract suite runs the same cases on
 * both, so "works embedded" means "works on Redis".
 *
 * Both runners share the script's contract from its `.lua` file (name, KEYS count,
 * ARGV count), convert arguments to the same strings, convert replies the same way
 * (see lua-reply.ts) and reject with the same REDIS_* codes.
 *
 * @example
 * const registry = await ScriptRegistry.fromDir(scriptsDir);
 * const runner: ScriptRunner = process.env.REDIS_URL
 *   ? new RedisScriptRunner(await connectRedis(), registry)
 *   : new InProcessScriptRunner({ registry, twins: { "take-token": takeToken }, keyspace });
 * await runner.run("take-token", ["rl:{u1}"], [10, 5]);
 */
import { isThenable } from "@casebook/kit/thenable";
import type { RedisClient } from "./connect-redis.ts";
import type { InProcessKeyspace } from "./in-process-keyspace.ts";
import { LuaErrorReply, type LuaReply, toRedisReply } from "./lua-reply.ts";
import { redisErrors } from "./redis-errors.ts";
import type { ScriptArg } from "./script-contract.ts";
import { type ScriptCall, type ScriptRegistry, scriptFailed } from "./script-registry.ts";

export interface ScriptRunner {
  /** Runs script `name` atomically with its KEYS and ARGV; resolves to its reply. */
  run(name: string, keys: string[], args: ScriptArg[]): Promise<unknown>;
  /** Runs many calls in one round trip; each call is atomic, the batch is not. Results in call order. */
  runBatch(calls: readonly ScriptCall[]): Promise<PromiseSettledResult<unknown>[]>;
}

/** Runs the real Lua scripts on Redis or a Redis Cluster (EVALSHA, EVAL on NOSCRIPT). */
export class RedisScriptRunner implements ScriptRunner {
  readonly #redis: RedisClient;
  readonly #registry: ScriptRegistry;

  constructor(redis: RedisClient, registry: ScriptRegistry) {
    this.#redis = redis;
    this.#registry = registry;
  }

  run(name: string, keys: string[], args: ScriptArg[]): Promise<unknown> {
    return this.#registry.run(this.#redis, name, keys, args);
  }

  runBatch(calls: readonly ScriptCall[]): Promise<PromiseSettledResult<unknown>[]> {
    return this.#registry.runBatch(this.#redis, calls);
  }
}

/**
 * A twin: the script's logic in TypeScript, against the keyspace, with ARGV as strings
 * (as Lua receives them). It MUST be synchronous: that is what makes it atomic.
 * It must touch only `keys`, read time only from `keyspace.time()`, and signal an error
 * reply by returning `{ err: "CODE text" }` like Lua's `redis.error_reply`.
 */
export type ScriptTwin = (
  keyspace: InProcessKeyspace,
  keys: readonly string[],
  argv: readonly string[],
) => LuaReply;

export interface InProcessScriptRunnerOptions {
  /** The scripts' contracts: the twins are checked against the same `.lua` headers. */
  registry: ScriptRegistry;
  /** One twin per script, under the script's name. */
  twins: Readonly<Record<string, ScriptTwin>>;
  keyspace: InProcessKeyspace;
}

/** Runs each script's twin atomically against an in-process keyspace: the embedded engine. */
export class InProcessScriptRunner implements ScriptRunner {
  readonly #registry: ScriptRegistry;
  readonly #twins: Map<string, ScriptTwin>;
  readonly #keyspace: InProcessKeyspace;

  /** Throws REDIS_SCRIPT_UNKNOWN when a script lacks a twin or a twin lacks a script. */
  constructor(options: InProcessScriptRunnerOptions) {
    this.#registry = options.registry;
    this.#twins = new Map(Object.entries(options.twins));
    this.#keyspace = options.keyspace;
    const scripts = options.registry.names();
    const missing = scripts.filter((name) => !this.#twins.has(name));
    const orphans = [...this.#twins.keys()].filter((name) => !scripts.includes(name));
    if (missing.length > 0 || orphans.length > 0) {
      throw redisErrors.create("REDIS_SCRIPT_UNKNOWN", {
        detail:
          `The twin rule is broken: scripts without a twin [${missing.join(", ")}], ` +
          `twins without a script [${orphans.join(", ")}]. Add the missing half.`,
        fields: { missing, orphans },
      });
    }
  }

  async run(name: string, keys: string[], args: ScriptArg[]): Promise<unknown> {
    return this.#execute(name, keys, this.#prepare(name, keys, args));
  }

  /** Like a pipeline: a malformed call refuses the whole batch before any call runs. */
  async runBatch(calls: readonly ScriptCall[]): Promise<PromiseSettledResult<unknown>[]> {
    this.#registry.checkBatch(calls.length);
    const prepared = calls.map((call) => ({ call, argv: this.#prepare(call.name, call.keys, call.args) }));
    return prepared.map(({ call, argv }) => {
      try {
        return { status: "fulfilled", value: this.#execute(call.name, call.keys, argv) };
      } catch (reason) {
        return { status: "rejected", reason };
      }
    });
  }

  /** The same validation the Redis runner applies: name, arity, finite numbers, slots. */
  #prepare(name: string, keys: readonly string[], args: readonly ScriptArg[]): string[] {
    const { argv } = this.#registry.prepare(name, keys, args);
    this.#registry.checkSlots(name, keys);
    return argv;
  }

  /** Runs the twin in one synchronous, clock-frozen step and converts its reply like Redis. */
  #execute(name: string, keys: readonly string[], argv: readonly string[]): unknown {
    const twin = this.#twins.get(name)!;
    try {
      const reply = this.#keyspace.atomic(() => twin(this.#keyspace, keys, argv), keys);
      if (isThenable(reply))
        throw new TypeError(`twin ${name} returned a promise; twins must be synchronous`);
      return toRedisReply(reply);
    } catch (error) {
      throw twinError(name, error);
    }
  }
}

/** Maps a twin's failure to the code the real script's failure would carry. */
function twinError(name: string, error: unknown): unknown {
  if (redisErrors.is(error, "REDIS_KEYSPACE_FULL")) return error;
  if (error instanceof LuaErrorReply) return scriptFailed(name, error.reply, error);
  // A command error inside the twin (WRONGTYPE, not an integer, a twin bug) is, on Redis,
  // a script runtime error: the same code, the same leading word.
  const message = error instanceof Error ? error.message : String(error);
  return scriptFailed(name, message, error);
}
