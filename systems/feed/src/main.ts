/**
 * Composition root of feed — news feed / timeline (seed 000 §3): config → service (JSON logs,
 * /healthz, /readyz, /metrics, /openapi.json, problem+json errors, graceful close) →
 * metrics → API → listen, through infra's `startService`, which closes what a failed start
 * opened. Stateless: its state will live in its engines. The first store adds the
 * `database` step (`{ system: "feed", env, ...databaseOptionsOf(config), migrate }`,
 * with `runMigrations` on `src/store/migrations/`): opened first, pinged by /readyz,
 * migrated before `build`, closed last.
 *
 * @example
 * // PORT=8103 node systems/feed/src/main.ts   (npx casebook run feed runs it through the CLI)
 * const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
 * await fetch(`${running.url}/healthz`); // 200
 * await running.close();
 */
import type { Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { startService } from "@casebook/infra/http/start-service";
import { systemClock } from "@casebook/kit/clock";
import packageJson from "../package.json" with { type: "json" };
import { registerApi } from "./api/register-api.ts";
import { configSchema, loadSystemConfig, type SystemConfig } from "./config.ts";
import { errors } from "./errors.ts";
import { createMetrics } from "./metrics.ts";

export const SYSTEM = "feed";
export const VERSION = packageJson.version;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly config: SystemConfig;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const started = await startService({
    service: {
      name: SYSTEM,
      version: VERSION,
      log: { level: config.logLevel },
      errors: [errors],
      description: "news feed / timeline (seed 000 §3)",
    },
    build: async ({ service }) => {
      createMetrics(service.registry, { version: VERSION });
      await registerApi(service.app, { clock: systemClock });
    },
    listen: { port: config.port, host: config.host },
  });
  return { url: started.url, service: started.service, config, close: () => started.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "news feed / timeline (seed 000 §3)",
    schema: configSchema,
    usage: [`npx casebook run ${SYSTEM}`, `node systems/${SYSTEM}/src/main.ts`],
    notes: `The API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}
