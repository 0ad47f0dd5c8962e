/**
 * The console's fault scenario for the gateway (000 §11, LG-08/09/10 shown live): a world of
 * its own — a PRIVATE provider simulator on a free loopback port and a private gateway
 * (started by the `startGateway` main.ts hands in, on a temporary PGlite, budgets and cache
 * off) serving `chat = primary-4o > fallback-mini` — never this service's own upstream,
 * database or breakers. A few clients stream without pause; the primary turns slow to its
 * first token (past the breaker's TTFT bound), its breaker opens and the requests go to the
 * fallback (declared in `x-llm-gateway-fallback`); the primary recovers, its breaker's probe
 * succeeds and it serves again. The plot: requests per second by the deployment that served
 * them; the sentence: when the breaker opened and closed, and how many requests each served.
 * Bounded: each phase by its own duration, the recovery by `recoveryMaxMs`, the whole run by
 * the registry's 60 s; the gateway, the simulator and the data directory go in every case.
 *
 * @example
 * new ScenarioRuns([providerDegradationScenario({ startGateway: (env) => main(env) })]);
 */
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { defaultModelProfile } from "../sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../sim/provider-sim.ts";

/** What the scenario needs of a gateway: main() as main.ts hands it in (no import cycle). */
export type StartGateway = (env: Record<string, string>) => Promise<{
  readonly url: string;
  readonly bootstrap: { apiKey: string } | undefined;
  close(): Promise<void>;
}>;

export interface ProviderDegradationOptions {
  readonly startGateway: StartGateway;
  /** The primary healthy before it degrades. Default 4 000. */
  readonly healthyMs?: number;
  /** The primary slow to its first token. Default 8 000. */
  readonly degradedMs?: number;
  /** Longest wait, after the recovery, for the primary's breaker to close. Default 20 000. */
  readonly recoveryMaxMs?: number;
  /** Requests kept going once the breaker closed, so the plot shows it. Default 3 000. */
  readonly tailMs?: number;
  /** Clients streaming at once. Default 4. */
  readonly clients?: number;
}

const PRIMARY = "primary-4o@default";
const FALLBACK = "fallback-mini@default";
/** The primary's time to first token healthy and degraded, against the breaker's bound. */
const HEALTHY_TTFT_MS = 50;
const DEGRADED_TTFT_MS = 1_500;
const BREAKER_TTFT_MS = 500;
const BREAKER_OPEN_MS = 2_000;
/** One request's bound: a degraded answer takes 1.5 s; more is a stuck scenario. */
const REQUEST_TIMEOUT_MS = 10_000;

type Phase = "healthy" | "degraded" | "recovered";

/** Requests per second by who served them, emitted as each second closes. */
class ServedTally {
  readonly total = new Map<string, number>();
  #second = 0;
  #inSecond = new Map<string, number>();
  readonly #ctx: ScenarioContext;
  readonly #startedMs = performance.now();

  constructor(ctx: ScenarioContext) {
    this.#ctx = ctx;
  }

  elapsedS(): number {
    return (performance.now() - this.#startedMs) / 1_000;
  }

  add(phase: Phase, servedBy: string): void {
    this.#roll();
    this.#inSecond.set(servedBy, (this.#inSecond.get(servedBy) ?? 0) + 1);
    const key = `${phase}/${servedBy}`;
    this.total.set(key, (this.total.get(key) ?? 0) + 1);
  }

  count(phase: Phase, servedBy: string): number {
    return this.total.get(`${phase}/${servedBy}`) ?? 0;
  }

  /** Emits the seconds that have closed (0 for a deployment that served nothing in one). */
  #roll(): void {
    const now = Math.floor(this.elapsedS());
    while (this.#second < now) {
      for (const series of [PRIMARY, FALLBACK, "failed"])
        this.#ctx.point(series, this.#second + 1, this.#inSecond.get(series) ?? 0);
      this.#inSecond = new Map();
      this.#second += 1;
    }
  }

  flush(): void {
    this.#roll();
  }
}

/** One streamed request through the private gateway: who served it, or "failed". */
async function streamOnce(gatewayUrl: string, apiKey: string, signal: AbortSignal): Promise<string> {
  try {
    const res = await fetch(`${gatewayUrl}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({
        model: "chat",
        stream: true,
        max_tokens: 8,
        messages: [{ role: "user", content: "Say something short." }],
      }),
      signal: AbortSignal.any([signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
    });
    const text = await res.text();
    if (res.status !== 200 || !text.includes("data: [DONE]")) return "failed";
    return res.headers.get("x-llm-gateway-served-by") ?? "failed";
  } catch {
    return "failed";
  }
}

async function breakerState(gatewayUrl: string, adminToken: string): Promise<string> {
  const res = await fetch(`${gatewayUrl}/v1/admin/destinations`, {
    headers: { authorization: `Bearer ${adminToken}` },
  });
  const body = (await res.json()) as { destinations: Array<{ deployment: string; state: string }> };
  return body.destinations.find((d) => d.deployment === PRIMARY)?.state ?? "unknown";
}

export function providerDegradationScenario(options: ProviderDegradationOptions): Scenario {
  const healthyMs = options.healthyMs ?? 4_000;
  const degradedMs = options.degradedMs ?? 8_000;
  const recoveryMaxMs = options.recoveryMaxMs ?? 20_000;
  const tailMs = options.tailMs ?? 3_000;
  const clients = options.clients ?? 4;
  return {
    id: "provider-degradation",
    title: "A provider degrades: the breaker opens, the fallback serves",
    line: `A private provider's primary model slows to a ${DEGRADED_TTFT_MS / 1_000} s first token (bound ${BREAKER_TTFT_MS} ms) for ${degradedMs / 1_000} s, then recovers: requests per second by the deployment that served them (LG-08/09/10).`,
    xLabel: "s from the start",
    yLabel: "requests served per second",
    run: async (ctx) => {
      const { signal } = ctx;
      const adminToken = randomBytes(24).toString("hex");
      let sim: ProviderSim | undefined;
      let gateway: Awaited<ReturnType<StartGateway>> | undefined;
      const dataDir = await mkdtemp(join(tmpdir(), "casebook-llm-scenario-"));
      try {
        const profile = { ...defaultModelProfile, ttftMs: HEALTHY_TTFT_MS, tokensPerS: 200, answerTokens: 8 };
        sim = createProviderSim({
          log: { level: "silent" },
          behaviour: { models: { "primary-4o": profile, "fallback-mini": profile } },
        });
        const simUrl = (await sim.listen({ port: 0, host: "127.0.0.1" })).url;
        gateway = await options.startGateway({
          PORT: "0",
          HOST: "127.0.0.1",
          LOG_LEVEL: "silent",
          CASEBOOK_DATA: dataDir,
          LLM_GATEWAY_UPSTREAM_URL: `${simUrl}/v1`,
          LLM_GATEWAY_MODELS: "chat=primary-4o>fallback-mini",
          LLM_GATEWAY_BOOTSTRAP_TENANT: "scenario",
          LLM_GATEWAY_ADMIN_TOKEN: adminToken,
          LLM_GATEWAY_BUDGETS: "false",
          LLM_GATEWAY_CACHE: "false",
          LLM_GATEWAY_BREAKER_TTFT_MS: String(BREAKER_TTFT_MS),
          LLM_GATEWAY_BREAKER_FAILURES: "3",
          LLM_GATEWAY_BREAKER_OPEN_MS: String(BREAKER_OPEN_MS),
        });
        const apiKey = gateway.bootstrap?.apiKey;
        if (apiKey === undefined) throw new Error("the private gateway created no tenant");
        const gatewayUrl = gateway.url;
        const setPrimaryTtft = async (ttftMs: number) => {
          const res = await fetch(`${simUrl}/admin/models/primary-4o`, {
            method: "PUT",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ ttftMs }),
          });
          if (res.status !== 200) throw new Error(`the simulator refused the change: ${res.status}`);
        };

        const tally = new ServedTally(ctx);
        let phase: Phase = "healthy";
        let running = true;
        const loops = Array.from({ length: clients }, async () => {
          while (running && !signal.aborted) tally.add(phase, await streamOnce(gatewayUrl, apiKey, signal));
        });
        const marks: { openedS?: number; degradedS?: number; recoveredS?: number; closedS?: number } = {};
        const watch = async (ms: number, from: number, to: number, until?: (state: string) => boolean) => {
          const endMs = performance.now() + ms;
          while (performance.now() < endMs) {
            const state = await breakerState(gatewayUrl, adminToken);
            if (state === "open" && marks.openedS === undefined && marks.degradedS !== undefined)
              marks.openedS = tally.elapsedS();
            ctx.progress(from + ((to - from) * (ms - (endMs - performance.now()))) / ms);
            if (until?.(state)) return true;
            await sleep(100, undefined, { signal });
          }
          return false;
        };
        await watch(healthyMs, 0, 0.15);
        await setPrimaryTtft(DEGRADED_TTFT_MS);
        phase = "degraded";
        marks.degradedS = tally.elapsedS();
        await watch(degradedMs, 0.15, 0.5);
        await setPrimaryTtft(HEALTHY_TTFT_MS);
        phase = "recovered";
        marks.recoveredS = tally.elapsedS();
        const closed = await watch(recoveryMaxMs, 0.5, 0.9, (state) => state === "closed");
        if (closed) {
          marks.closedS = tally.elapsedS();
          await watch(tailMs, 0.9, 1);
        }
        running = false;
        await Promise.all(loops);
        tally.flush();
        return sentence(tally, marks, recoveryMaxMs);
      } finally {
        await Promise.allSettled([gateway?.close()]);
        await Promise.allSettled([sim?.close()]);
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
}

function sentence(
  tally: ServedTally,
  marks: { openedS?: number; degradedS?: number; recoveredS?: number; closedS?: number },
  recoveryMaxMs: number,
): string {
  const at = (s: number | undefined) => (s === undefined ? "never" : `${s.toFixed(1)} s`);
  const opened =
    marks.openedS === undefined || marks.degradedS === undefined
      ? "the primary's breaker never opened"
      : `the primary's breaker opened ${(marks.openedS - marks.degradedS).toFixed(1)} s after it slowed`;
  const closed =
    marks.closedS === undefined || marks.recoveredS === undefined
      ? `it had not closed ${recoveryMaxMs / 1_000} s after the recovery`
      : `it closed again ${(marks.closedS - marks.recoveredS).toFixed(1)} s after the recovery`;
  const failed = (["healthy", "degraded", "recovered"] as const).reduce(
    (n, p) => n + tally.count(p, "failed"),
    0,
  );
  return (
    `Healthy: ${tally.count("healthy", PRIMARY)} requests served by the primary, ${tally.count("healthy", FALLBACK)} by the fallback. ` +
    `Primary slowed to a ${DEGRADED_TTFT_MS / 1_000} s first token at ${at(marks.degradedS)}: ${opened}; ` +
    `while slow, ${tally.count("degraded", FALLBACK)} requests were served by the fallback and ${tally.count("degraded", PRIMARY)} by the primary. ` +
    `Recovered at ${at(marks.recoveredS)}: ${closed}, and the primary served ${tally.count("recovered", PRIMARY)} requests after it. ` +
    `${failed} requests failed.`
  );
}
