/**
 * Composition root of the rate-limiter service: config → Redis or the in-process
 * engine → Limiter → HTTP API (POST /v1/check, GET /v1/policies) → policy hot reload.
 * Stateless: run as many instances as you like against one REDIS_URL.
 */
import { requireCredentialsBeyondLoopback } from "@casebook/infra/http/loopback-guard";
import { registerScenarioRoutes, ScenarioRuns, scenarioErrors } from "@casebook/infra/http/scenario-runs";
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { startService } from "@casebook/infra/http/start-service";
import { startEnvoyRls } from "./api/envoy-rls.ts";
import { registerRateLimiterApi } from "./api/register-api.ts";
import { configSchema, loadRateLimiterConfig } from "./config.ts";
import { createRateLimiter } from "./create-rate-limiter.ts";
import { rateLimitErrors } from "./errors.ts";
import { createLimiterMetrics } from "./metrics.ts";
import { boundaryBurstScenario } from "./scenarios/boundary-burst-scenario.ts";
import { redisStoppedScenario } from "./scenarios/redis-stopped-scenario.ts";
import { loadPolicyFile, watchPolicyFile } from "./workers/policy-watcher.ts";

export interface RunningService {
  readonly url: string;
  readonly service: Service;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const config = loadRateLimiterConfig(env);
  const tokens = config.tokens?.split(",") ?? [];
  // HOST binds both the HTTP and the gRPC listener: one check covers both.
  requireCredentialsBeyondLoopback({
    host: config.host,
    credentialsSet: tokens.length > 0,
    setting: "RATE_LIMITER_TOKEN",
    credential: "a bearer token of 16+ characters (comma-separated for several)",
  });
  const policies = await loadPolicyFile(config.policies);
  const { url, service } = await startService({
    service: {
      name: "rate-limiter",
      version: "0.1.0",
      log: { level: config.logLevel },
      errors: [rateLimitErrors, scenarioErrors],
      description: "Distributed rate limiter (seed 000 §1): may key K spend C now?",
    },
    build: async ({ service }) => {
      const rl = await createRateLimiter({
        policies,
        redisUrl: config.redisUrl,
        redisClusterNodes: config.redisClusterNodes
          ?.split(",")
          .map((node) => node.trim())
          .filter(Boolean),
        keyPrefix: config.keyPrefix,
        timeoutMs: config.timeoutMs,
        maxWaitMs: config.maxWaitMs,
        connectTimeoutMs: config.connectTimeoutMs,
        breakerFailures: config.breakerFailures,
        breakerOpenMs: config.breakerOpenMs,
        instances: config.instances,
        maxInFlight: config.maxInFlight,
        maxQueued: config.maxQueued,
        queueWaitMs: config.queueWaitMs,
        heartbeatMs: config.heartbeatMs,
        onStoreError: (error) => service.log.warn({ err: error }, "limiter degraded: store call failed"),
        onUnreachableAtStart: (message) =>
          service.log.warn(`${message}; starting anyway: each policy's failMode decides until Redis answers`),
      });
      rl.breaker.onStateChange((change) => service.log.warn(change, "limiter store breaker changed state"));
      const metrics = createLimiterMetrics(service.registry, rl.limiter, rl.breaker, rl);
      service.onClose(async () => metrics.stop());
      // The API behind the token when one is set; /healthz, /readyz and /metrics stay open to probes.
      await registerRateLimiterApi(service.app, { limiter: rl.limiter, metrics, tokens });
      // The console's scenarios (issue 23), loopback only; redis-stopped on a private redis-server.
      const scenarios = new ScenarioRuns([boundaryBurstScenario(), redisStoppedScenario()]);
      registerScenarioRoutes(service.app, scenarios);
      service.onClose(() => scenarios.drain());
      service.addCheck(rl.store.engine, () => rl.store.ping());
      if (config.grpcPort !== undefined) {
        const rls = await startEnvoyRls({
          limiter: rl.limiter,
          port: config.grpcPort,
          host: config.host,
          log: service.log.child({ api: "envoy-rls" }),
          metrics,
          tokens,
        });
        // Close hooks run last-added first: the gRPC server stops before the store closes.
        service.onClose(() => rls.close());
        service.log.info({ port: rls.port, domain: policies.domain }, "envoy rate limit service listening");
      }
      const stopWatching = watchPolicyFile({
        path: config.policies,
        onReload: (next) => {
          rl.limiter.setConfig(next);
          service.log.info({ policies: next.policies.length }, "policies reloaded");
        },
        onError: (error) =>
          service.log.error({ err: error }, "policy file refused; keeping the policies in force"),
      });
      service.onClose(() => rl.close());
      service.onClose(stopWatching);
      return rl;
    },
    listen: { port: config.port, host: config.host },
    listening: (rl) => ({ engine: rl.store.engine, policies: policies.policies.length }),
  });
  return { url, service, close: () => service.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "rate-limiter",
    summary: "distributed rate limiter (seed 000 §1): may key K spend C now?",
    schema: configSchema,
    usage: ["npx casebook run rate-limiter", "node systems/rate-limiter/src/main.ts"],
    notes: "The API, the policy file and the failure modes: systems/rate-limiter/README.md",
    start: async () => (await main()).service,
  });
}
