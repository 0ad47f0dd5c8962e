/**
 * The gateway as tests meet it: the provider simulator on real HTTP (its knobs set per test
 * through its admin API), the gateway started by main() on embedded PGlite in a temporary
 * data directory, pointed at the simulator, with a tenant and its API key, and the official
 * `openai` SDK as the client.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { seededRandom } from "@casebook/kit/random";
import OpenAI from "openai";
import { main, type RunningSystem } from "../src/main.ts";
import { defaultModelProfile, type ModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../src/sim/provider-sim.ts";

export interface GatewayFixture {
  readonly gateway: RunningSystem;
  readonly sim: ProviderSim;
  readonly simUrl: string;
  readonly apiKey: string;
  readonly client: OpenAI;
  /** Changes one model's knobs at the simulator (adds the model if new). */
  setModel(model: string, patch: Partial<ModelProfile>): Promise<void>;
  /** The simulator's generation records, newest last. */
  generations(): Promise<Array<{ id: string; model: string; generatedTokens: number; end: string }>>;
  close(): Promise<void>;
}

export interface FixtureOptions {
  /** LLM_GATEWAY_MODELS; default "gpt-4o-mini". */
  models?: string;
  /** More gateway environment. */
  env?: Record<string, string>;
  /** Every simulated model's profile at start. */
  profile?: Partial<ModelProfile>;
}

export async function startGateway(options: FixtureOptions = {}): Promise<GatewayFixture> {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-llm-gateway-"));
  const profile = { ...defaultModelProfile, ttftMs: 5, tokensPerS: 2_000, ...options.profile };
  const sim = createProviderSim({
    rng: seededRandom(1),
    log: { level: "silent" },
    behaviour: { models: { "gpt-4o-mini": profile, "gpt-4o": profile } },
  });
  const { url: simUrl } = await sim.listen({ port: 0 });
  let gateway: RunningSystem;
  try {
    gateway = await main({
      PORT: "0",
      LOG_LEVEL: "silent",
      CASEBOOK_DATA: dataDir,
      LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
      LLM_GATEWAY_BOOTSTRAP_TENANT: "acme",
      LLM_GATEWAY_MODELS: options.models ?? "gpt-4o-mini",
      ...options.env,
    });
  } catch (error) {
    await sim.close();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const apiKey = gateway.bootstrap?.apiKey;
  if (apiKey === undefined) throw new Error("the fixture's tenant was not created");
  const client = new OpenAI({ baseURL: `${gateway.url}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });
  return {
    gateway,
    sim,
    simUrl,
    apiKey,
    client,
    async setModel(model, patch) {
      const res = await fetch(`${simUrl}/admin/models/${model}`, {
        method: "PUT",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(patch),
      });
      if (res.status !== 200)
        throw new Error(`PUT /admin/models/${model}: ${res.status} ${await res.text()}`);
    },
    async generations() {
      const res = await fetch(`${simUrl}/admin/streams?limit=1000`);
      return ((await res.json()) as { streams: Awaited<ReturnType<GatewayFixture["generations"]>> }).streams;
    },
    async close() {
      await gateway.close();
      await sim.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
