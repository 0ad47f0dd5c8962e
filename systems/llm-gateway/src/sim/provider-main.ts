/**
 * Starts the LLM provider simulator as its own service (it stands for a provider outside
 * the gateway, so it runs in its own process): config from the environment → the
 * simulator → listen → graceful shutdown on SIGINT/SIGTERM.
 *
 * @example
 * // PORT=8161 PROVIDER_SEED=42 node systems/llm-gateway/src/sim/provider-main.ts
 * const running = await main({ PORT: "0", PROVIDER_SEED: "7" });
 * await running.close();
 */
import { requireCredentialsBeyondLoopback } from "@casebook/infra/http/loopback-guard";
import { runServiceEntry } from "@casebook/infra/http/service-entry";
import { listenFields, logLevelField } from "@casebook/infra/http/service-preset";
import { field, loadConfig } from "@casebook/kit/config";
import { seededRandom, systemRandom } from "@casebook/kit/random";
import { defaultModelNames, defaultModelProfile } from "./provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "./provider-sim.ts";

export const providerConfigSchema = {
  ...listenFields({ port: 8161 }),
  seed: field.string({
    env: "PROVIDER_SEED",
    description: "Seed of 429s and errors (unset = Math.random); same seed + same calls = same run",
  }),
  ttftMs: field.int({
    env: "PROVIDER_TTFT_MS",
    default: defaultModelProfile.ttftMs,
    min: 0,
    max: 600_000,
    description: "Every model's time to first token",
  }),
  tokensPerS: field.int({
    env: "PROVIDER_TOKENS_PER_S",
    default: defaultModelProfile.tokensPerS,
    min: 1,
    max: 100_000,
    description: "Every model's pace after the first token",
  }),
  answerTokens: field.int({
    env: "PROVIDER_ANSWER_TOKENS",
    default: defaultModelProfile.answerTokens,
    min: 0,
    max: 1_000_000,
    description: "Tokens in an answer max_tokens does not cut",
  }),
  adminToken: field.string({
    env: "PROVIDER_ADMIN_TOKEN",
    secret: true,
    description: "Bearer token for /admin/* (unset = open: a simulator on loopback)",
  }),
  ...logLevelField(),
};

export interface RunningProvider {
  readonly url: string;
  readonly sim: ProviderSim;
  close(): Promise<void>;
}

export async function main(env: NodeJS.ProcessEnv = process.env): Promise<RunningProvider> {
  const config = loadConfig(providerConfigSchema, { env });
  // Its /admin routes change what the provider does: open only where nobody else can reach them.
  requireCredentialsBeyondLoopback({
    host: config.host,
    credentialsSet: config.adminToken !== undefined,
    setting: "PROVIDER_ADMIN_TOKEN",
    credential: "a bearer token for /admin/*",
  });
  const profile = {
    ...defaultModelProfile,
    ttftMs: config.ttftMs,
    tokensPerS: config.tokensPerS,
    answerTokens: config.answerTokens,
  };
  const sim = createProviderSim({
    rng: config.seed === undefined ? systemRandom : seededRandom(config.seed),
    behaviour: {
      models: Object.fromEntries(defaultModelNames.map((name) => [name, profile])),
    },
    ...(config.adminToken === undefined ? {} : { adminToken: config.adminToken }),
    log: { level: config.logLevel },
  });
  const { url } = await sim.listen({ port: config.port, host: config.host });
  sim.service.log.info({ url, seeded: config.seed !== undefined }, "llm-provider-sim listening");
  return { url, sim, close: () => sim.close() };
}

if (import.meta.main) {
  await runServiceEntry({
    name: "llm-provider-sim",
    summary: "an LLM provider (OpenAI and Anthropic wire formats) with the failures the gateway must survive",
    schema: providerConfigSchema,
    usage: ["npx casebook llm-gateway provider-sim", "node systems/llm-gateway/src/sim/provider-main.ts"],
    notes: "Its admin API (per-model TTFT, pace, 429s, cuts, pauses): systems/llm-gateway/README.md",
    start: async () => (await main()).sim.service,
  });
}
