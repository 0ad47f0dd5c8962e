/**
 * Several gateway processes as replicas (gateway-child.ts) on one real PostgreSQL schema (the
 * key and quota table, cache, usage) and one Redis (the counter), all pointed at one provider
 * simulator serving gpt-4o-mini — for the races and LG-14. Budget windows last an hour, so no
 * window turns during a test. Undefined when PostgreSQL or Redis is not running (skipped).
 *
 * @example
 * const world = await startReplicas(t, { prefix: "llm_race", count: 3, profile: { ttftMs: 20 } });
 * const created = await world.tenants.createIfAbsent({ id: "t", name: "t", rpm: 10, tpm: 2_000 });
 * await fetch(`${world.urls[0]}/v1/chat/completions`, …);
 */
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import { runMigrations } from "@casebook/infra/sql/migrations";
import type { Database } from "@casebook/infra/sql/sql";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { type SpawnedChild, spawnChild } from "@casebook/lab/spawn-child";
import { openPostgresTestSchema } from "@casebook/lab/sql-backends";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";
import { defaultModelProfile, type ModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim } from "../src/sim/provider-sim.ts";
import { TenantRepository } from "../src/store/tenant-repository.ts";

export interface ReplicaWorld {
  readonly replicas: SpawnedChild[];
  /** Each replica's base URL, in the order of `replicas`. */
  readonly urls: string[];
  readonly db: Database;
  readonly tenants: TenantRepository;
}

export async function startReplicas(
  t: TestContext,
  options: {
    prefix: string;
    count: number;
    seed: number;
    profile: Partial<ModelProfile>;
    env?: Record<string, string>;
  },
): Promise<ReplicaWorld | undefined> {
  const pgUrl = await requirePostgres(t);
  const redisUrl = await requireRedis(t);
  if (pgUrl === undefined || redisUrl === undefined) return undefined;
  const schema = await openPostgresTestSchema(pgUrl, {
    system: "llm-gateway",
    prefix: options.prefix,
    prepare: (db) => runMigrations(db, { dir: new URL("../src/store/migrations/", import.meta.url) }),
  });
  t.after(() => schema.drop());
  const sim = createProviderSim({
    rng: seededRandom(options.seed),
    log: { level: "silent" },
    behaviour: { models: { "gpt-4o-mini": { ...defaultModelProfile, ...options.profile } } },
  });
  const { url: simUrl } = await sim.listen({ port: 0 });
  t.after(() => sim.close());
  const env = {
    ...process.env,
    PORT: "0",
    LOG_LEVEL: "warn",
    DATABASE_URL: pgUrl,
    LLM_GATEWAY_DB_SCHEMA: schema.schema,
    REDIS_URL: redisUrl,
    // A loaded CI machine: a slow counter call must not turn into a 503 mid-race.
    LLM_GATEWAY_REDIS_TIMEOUT_MS: "5000",
    LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
    LLM_GATEWAY_MODELS: "gpt-4o-mini",
    LLM_GATEWAY_BOOTSTRAP_TENANT: "off",
    // An hour: no window turns during a test, so all of it is counted against one budget.
    LLM_GATEWAY_BUDGET_WINDOW_MS: "3600000",
    ...options.env,
  };
  const replicas = await Promise.all(
    Array.from({ length: options.count }, () =>
      spawnChild(new URL("./gateway-child.ts", import.meta.url), {
        env,
        ready: /^ready /,
        readyTimeoutMs: 180_000,
        test: t,
      }),
    ),
  );
  return {
    replicas,
    urls: replicas.map((r) => r.readyLine.split(" ")[1]!),
    db: schema.db,
    tenants: new TenantRepository(schema.db, { clock: systemClock, randomBytes }),
  };
}
