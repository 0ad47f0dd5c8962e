/**
 * Composition root of {{name}} — {{title}}{{seedParen}}: config → service (JSON logs,
 * /healthz, /readyz, /metrics, /openapi.json, problem+json errors, graceful close) →
 * metrics → API → listen. Stateless: its state will live in its engines. An engine is
 * opened here when the first store arrives (infra's openDatabase, then runMigrations on
 * `src/store/migrations/`), and closed by the first close hook, so it closes last.
 *
 * @example
 * // PORT={{port}} node systems/{{name}}/src/main.ts   (npx casebook run {{name}} runs it through the CLI)
 * const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
 * await fetch(`${running.url}/healthz`); // 200
 * await running.close();
 */
import { createService, type Service } from "@casebook/infra/http/service";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { systemClock } from "@casebook/kit/clock";
import packageJson from "../package.json" with { type: "json" };
import { registerApi } from "./api/register-api.ts";
import { configSchema, loadSystemConfig, type SystemConfig } from "./config.ts";
import { errors } from "./errors.ts";
import { createMetrics } from "./metrics.ts";

export const SYSTEM = "{{name}}";
export const VERSION = packageJson.version;

export interface RunningSystem {
  readonly url: string;
  readonly service: Service;
  readonly config: SystemConfig;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningSystem> {
  const config = loadSystemConfig(env);
  const service = createService({
    name: SYSTEM,
    version: VERSION,
    log: { level: config.logLevel },
    errors: [errors],
    description: "{{title}}{{seedParen}}",
  });
  try {
    createMetrics(service.registry, { version: VERSION });
    await registerApi(service.app, { clock: systemClock });
    const { url } = await service.listen({ port: config.port, host: config.host });
    service.log.info({ url }, `${SYSTEM} listening`);
    return { url, service, config, close: () => service.close() };
  } catch (error) {
    // A start that fails leaves no socket or loop behind; the entry prints the error itself.
    await service
      .close()
      .catch((closeError: unknown) => service.log.error({ err: closeError }, "close failed"));
    throw error;
  }
}

if (import.meta.main) {
  await runServiceEntry({
    name: SYSTEM,
    summary: "{{title}}{{seedParen}}",
    schema: configSchema,
    usage: [`npx casebook run ${SYSTEM}`, `node systems/${SYSTEM}/src/main.ts`],
    notes: `The API, the design and the claims: systems/${SYSTEM}/README.md`,
    start: async () => (await main()).service,
  });
}
