/**
 * ioredis's commands without one closure each born in the old generation.
 *
 * V8's parser marks a function literal assigned to a property (`obj.f = () => …`) "pretenured":
 * the closure is allocated straight in the old generation, on the guess that a function stored
 * on an object is a method that lives long. ioredis's `Command#initPromise` does that for every
 * command it sends (`this.reject = (err) => { … }` inside the promise's executor). So every
 * command's reject closure is old from birth, and through its context it points at the command
 * and the command's promise; the scavenger counts every old object as alive, so the command, its
 * promise and its reply survive every young collection until the next mark-compact — and are
 * copied, then promoted, on the way. At thousands of commands a second that is megabytes
 * promoted per scavenge and scavenges of several ms (issue 20, measured on Node 24 with a Fastify
 * route running one EVALSHA with a 6 KB reply at 2,500/s from another process: 2.33 MB promoted
 * per scavenge, 7.1 ms mean pause, p99 15.0 ms; with this module 0.09 MB, 1.1 ms, 6.6 ms).
 *
 * `installCommandPromises()` replaces `Command.prototype.initPromise` with one that builds the
 * same two functions through calls — young, like every other per-command object — and keeps
 * everything else as ioredis has it: the same fields, the same argument transform, the same
 * settling (timers cleared, `isSettled`, the friendly error stack, the callback). It installs
 * only on the ioredis version it was written against, whose `initPromise` still has that shape;
 * on any other it leaves ioredis alone and says why (`test/redis/command-promise.test.ts` then
 * fails, so an upgrade is looked at again rather than silently patched or silently slow).
 * connect-redis.ts installs it when it is loaded: every client infra opens gets it.
 *
 * @example
 * const outcome = installCommandPromises();
 * outcome.installed; // true on ioredis 6.0.0
 */
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { Command } from "ioredis";

/** The ioredis release whose `Command#initPromise` this replaces, line for line but the closures. */
export const PATCHED_IOREDIS_VERSION = "6.0.0";
/** The statement of the original that makes one old-generation closure per command. */
const PRETENURED_STATEMENT = "this.reject = (err) =>";

type Callback = ((err: Error | null, result?: unknown) => void) | undefined;
/** ioredis's own `standard-as-callback`: the promise, with the node-style callback attached when there is one. */
type AsCallback = (promise: Promise<unknown>, callback: Callback) => Promise<unknown>;
/** ioredis's own: the error's stack cut to the caller's frames when `showFriendlyErrorStack` is on. */
type OptimizeErrorStack = (err: Error, stack: string | undefined, dirname: string) => Error;

/** The fields of ioredis's Command that its initPromise reads and writes (ioredis keeps them untyped). */
interface CommandInternals {
  name: string;
  args: unknown[];
  callback: Callback;
  errorStack?: Error;
  transformed: boolean;
  isResolved: boolean;
  isSettled: boolean;
  promise: Promise<unknown>;
  resolve: (value: unknown) => unknown;
  reject: (err: Error) => void;
  stringifyArguments(): void;
  _convertValue(resolve: (value: unknown) => void): (value: unknown) => unknown;
  _clearTimers(): void;
}

interface CommandStatics {
  _transformer: { argument: Record<string, ((args: unknown[]) => unknown[]) | undefined> };
  prototype: { initPromise(this: CommandInternals): void };
}

export type CommandPromisesOutcome = { installed: true } | { installed: false; reason: string };

let outcome: CommandPromisesOutcome | undefined;

/** The command's reject, made by a call (so young): what ioredis's own closure does. */
function rejecterOf(
  command: CommandInternals,
  reject: (err: Error) => void,
  optimizeErrorStack: OptimizeErrorStack,
  ioredisDir: string,
): (err: Error) => void {
  return (err) => {
    command._clearTimers();
    command.isSettled = true;
    reject(command.errorStack ? optimizeErrorStack(err, command.errorStack.stack, ioredisDir) : err);
  };
}

/** Replaces ioredis's `Command#initPromise` once per process; later calls return the first outcome. */
export function installCommandPromises(): CommandPromisesOutcome {
  if (outcome !== undefined) return outcome;
  const require = createRequire(import.meta.resolve("ioredis"));
  const version = (require("../package.json") as { version: string }).version;
  const statics = Command as unknown as CommandStatics;
  const original = statics.prototype.initPromise;
  if (version !== PATCHED_IOREDIS_VERSION) {
    outcome = { installed: false, reason: `ioredis ${version} is not ${PATCHED_IOREDIS_VERSION}` };
    return outcome;
  }
  if (typeof original !== "function" || !original.toString().includes(PRETENURED_STATEMENT)) {
    outcome = { installed: false, reason: "ioredis's Command#initPromise has changed shape" };
    return outcome;
  }
  const asCallback = (require("standard-as-callback") as { default: AsCallback }).default;
  const { optimizeErrorStack } = require("./utils") as { optimizeErrorStack: OptimizeErrorStack };
  const ioredisDir = dirname(require.resolve("./Command"));
  statics.prototype.initPromise = function initPromise(this: CommandInternals): void {
    this.isResolved = false;
    this.isSettled = false;
    let settle!: (value: unknown) => void;
    let fail!: (err: Error) => void;
    const promise = new Promise<unknown>((resolve, reject) => {
      settle = resolve;
      fail = reject;
    });
    try {
      if (!this.transformed) {
        this.transformed = true;
        const transformer = statics._transformer.argument[this.name];
        if (transformer) this.args = transformer(this.args);
        this.stringifyArguments();
      }
      this.resolve = this._convertValue(settle);
      this.reject = rejecterOf(this, fail, optimizeErrorStack, ioredisDir);
    } catch (error) {
      // As in ioredis, where this ran inside the executor: arguments that cannot be sent reject the promise.
      fail(error as Error);
    }
    this.promise = asCallback(promise, this.callback);
  };
  outcome = { installed: true };
  return outcome;
}
