/**
 * The token counter (LG-07, LG-14): budgets reserved and settled in ONE atomic script call
 * per request — on Redis the scripts of `scripts/` (shared by every gateway replica: the
 * debit of one is what the next reads), embedded their in-process twins, which run the very
 * functions the scripts mirror (`domain/token-window.ts`) synchronously, so they are atomic
 * too. One contract suite runs on both (`test/budget-store.contract.test.ts`).
 *
 * @example
 * const store = await openInProcessBudgetStore({ clock: systemClock });
 * const r = await store.reserve([{ key: "llm:{acme}:tpm", limit: 10_000, cost: 6_000 }], { windowMs: 60_000 });
 * await store.settle(r, [{ key: "llm:{acme}:tpm", limit: 10_000, delta: -3_300 }], { windowMs: 60_000 });
 */
import { closeRedis, connectRedis, type RedisConnectOptions } from "@casebook/infra/redis/connect-redis";
import { InProcessKeyspace } from "@casebook/infra/redis/in-process-keyspace";
import type { LuaReply } from "@casebook/infra/redis/lua-reply";
import { ScriptRegistry } from "@casebook/infra/redis/script-registry";
import {
  InProcessScriptRunner,
  RedisScriptRunner,
  type ScriptRunner,
  type ScriptTwin,
} from "@casebook/infra/redis/script-runner";
import type { Clock } from "@casebook/kit/clock";
import { reserveAll, settleOne, ttlMs, type WindowState } from "../domain/token-window.ts";

const scriptsDir = new URL("./scripts/", import.meta.url);

export interface BudgetLine {
  /** The limit's key in the counter store. */
  readonly key: string;
  readonly limit: number;
  readonly cost: number;
}

export interface Reservation {
  readonly allowed: boolean;
  readonly windowId: number;
  /** See ReserveDecision.retryAfterMs: -1 = never fits. */
  readonly retryAfterMs: number;
  /** The line that decided a refusal. */
  readonly refused: BudgetLine | undefined;
}

export interface BudgetStore {
  readonly engine: "redis" | "in-process";
  reserve(lines: readonly BudgetLine[], options: { windowMs: number }): Promise<Reservation>;
  settle(
    reservation: Reservation,
    lines: readonly { key: string; limit: number; delta: number }[],
    options: { windowMs: number },
  ): Promise<void>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

class ScriptBudgetStore implements BudgetStore {
  readonly engine: "redis" | "in-process";
  readonly #runner: ScriptRunner;
  readonly #ping: () => Promise<void>;
  readonly #close: () => Promise<void>;

  constructor(options: {
    engine: "redis" | "in-process";
    runner: ScriptRunner;
    ping: () => Promise<void>;
    close: () => Promise<void>;
  }) {
    this.engine = options.engine;
    this.#runner = options.runner;
    this.#ping = options.ping;
    this.#close = options.close;
  }

  async reserve(lines: readonly BudgetLine[], options: { windowMs: number }): Promise<Reservation> {
    const args = [options.windowMs, ...lines.flatMap((line) => [line.limit, line.cost])];
    const reply = (await this.#runner.run(
      "budget-reserve",
      lines.map((line) => line.key),
      args,
    )) as number[];
    const [allowed, windowId, retryAfterMs, refusedLine] = reply.map(Number) as [
      number,
      number,
      number,
      number,
    ];
    return { allowed: allowed === 1, windowId, retryAfterMs, refused: lines[refusedLine - 1] };
  }

  async settle(
    reservation: Reservation,
    lines: readonly { key: string; limit: number; delta: number }[],
    options: { windowMs: number },
  ): Promise<void> {
    if (lines.length === 0) return;
    const args = [
      options.windowMs,
      reservation.windowId,
      ...lines.flatMap((line) => [line.limit, line.delta]),
    ];
    await this.#runner.run(
      "budget-settle",
      lines.map((line) => line.key),
      args,
    );
  }

  ping(): Promise<void> {
    return this.#ping();
  }

  close(): Promise<void> {
    return this.#close();
  }
}

function readState(keyspace: InProcessKeyspace, key: string): WindowState | undefined {
  const fields = keyspace.hgetall(key);
  if (fields.windowId === undefined) return undefined;
  return { windowId: Number(fields.windowId), used: Number(fields.used) };
}

function nowMsOf(keyspace: InProcessKeyspace): number {
  const [seconds, micros] = keyspace.time();
  return seconds * 1000 + Math.floor(micros / 1000);
}

/** budget-reserve-n.lua in TypeScript: reserveAll on the keyspace. */
const reserveTwin: ScriptTwin = (keyspace, keys, argv): LuaReply => {
  const windowMs = Number(argv[0]);
  const lines = keys.map((_, i) => ({ limit: Number(argv[1 + 2 * i]), cost: Number(argv[2 + 2 * i]) }));
  const decision = reserveAll(
    keys.map((key) => readState(keyspace, key)),
    lines,
    { nowMs: nowMsOf(keyspace), windowMs },
  );
  if (decision.allowed) {
    decision.next.forEach((state, i) => {
      const key = keys[i] as string;
      keyspace.hset(key, { windowId: state.windowId, used: state.used });
      keyspace.pexpire(key, ttlMs(state.used, lines[i]?.limit ?? 1, windowMs));
    });
  }
  return [decision.allowed ? 1 : 0, decision.windowId, decision.retryAfterMs, decision.refusedLine];
};

/** budget-settle-n.lua in TypeScript: settleOne per key on the keyspace. */
const settleTwin: ScriptTwin = (keyspace, keys, argv): LuaReply => {
  const windowMs = Number(argv[0]);
  const reservedWindowId = Number(argv[1]);
  const nowMs = nowMsOf(keyspace);
  keys.forEach((key, i) => {
    const limit = Number(argv[2 + 2 * i]);
    const state = settleOne(
      readState(keyspace, key),
      { limit, delta: Number(argv[3 + 2 * i]) },
      { nowMs, windowMs, reservedWindowId },
    );
    keyspace.hset(key, { windowId: state.windowId, used: state.used });
    keyspace.pexpire(key, ttlMs(state.used, limit, windowMs));
  });
  return 1;
};

export const budgetTwins: Readonly<Record<string, ScriptTwin>> = {
  "budget-reserve": reserveTwin,
  "budget-settle": settleTwin,
};

/** The embedded counter: the twins on an in-process keyspace (one process: no replicas share it). */
export async function openInProcessBudgetStore(options: {
  clock: Clock;
  maxKeys?: number;
}): Promise<BudgetStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const keyspace = new InProcessKeyspace({ clock: options.clock, maxKeys: options.maxKeys ?? 1_000_000 });
  return new ScriptBudgetStore({
    engine: "in-process",
    runner: new InProcessScriptRunner({ registry, twins: budgetTwins, keyspace }),
    ping: async () => {},
    close: async () => {},
  });
}

/** The shared counter on Redis: every replica pointed at it shares every budget. */
export async function openRedisBudgetStore(
  options: RedisConnectOptions & { url: string },
): Promise<BudgetStore> {
  const registry = await ScriptRegistry.fromDir(scriptsDir);
  const redis = await connectRedis({
    autoPipelining: true,
    connectionName: "llm-gateway-budgets",
    ...options,
  });
  try {
    await registry.loadAll(redis);
  } catch (error) {
    await closeRedis(redis);
    throw error;
  }
  return new ScriptBudgetStore({
    engine: "redis",
    runner: new RedisScriptRunner(redis, registry),
    ping: async () => {
      await redis.ping();
    },
    close: () => closeRedis(redis),
  });
}
