/**
 * The console's edge scenario (US-09, US-15 shown live): many clicks on a few codes, first
 * through an nginx edge, then straight at the origin — origin requests/s plotted against
 * clicks/s, and every click counted either way. All of it PRIVATE to the run: a fresh origin
 * (this system's own `main`, passed in, on an embedded PGlite in a temp dir, a free loopback
 * port) and a private nginx (lab's spawner, edge/nginx-edge-config.ts, `install: false`: a
 * console run never installs packages). Never this service's store, links or edge.
 *
 * With the edge on, the origin should see about one request per code per max-age window
 * (`proxy_cache_lock` for the first fill, `proxy_cache_use_stale updating` for each refill)
 * and the clicks are counted from the edge's JSON access log (the origin records nothing for
 * requests carrying the edge's token); with it off, every click is an origin request, recorded
 * by the origin's own buffer. The sentence gives both, and the clicks counted against the
 * clicks sent. The private edge's per-client limit (US-16) is raised far above the scenario's
 * rate: every click comes from 127.0.0.1, and a 429 would be the filter's effect, not the cache's.
 *
 * Bounded: each phase by its duration, the counting by `countMaxMs`, the whole by the run's 60 s;
 * the origin, nginx and the temp dir are stopped and removed in every case.
 *
 * @example
 * new ScenarioRuns([edgeOnOffScenario({ start: main })]);
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Scenario, ScenarioContext } from "@casebook/infra/http/scenario-runs";
import { freePort } from "@casebook/lab/free-port";
import { type SpawnedNginx, spawnNginx } from "@casebook/lab/spawn-nginx";
import { edgeHttpBlock, edgeMainDirectives } from "../edge/nginx-edge-config.ts";
import type { RunningSystem, StartMain } from "../running-system.ts";

export const EDGE_ON_OFF_ID = "edge-on-off";

export interface EdgeOnOffOptions {
  /** main.ts's `main` (passed in: main.ts registers this scenario, so importing it here would be a cycle). */
  start: StartMain;
  /** Codes clicked. Default 4. */
  codes?: number;
  /** The links' max-age: the edge's window. Default 2 s. */
  maxAgeS?: number;
  /** Clicks through the edge. Default 10 000 ms. */
  edgeOnMs?: number;
  /** Clicks straight at the origin. Default 6 000 ms. */
  edgeOffMs?: number;
  /** Clicks in flight at once. Default 8. */
  concurrency?: number;
  /** Longest wait for the clicks of a phase to be counted. Default 15 000 ms. */
  countMaxMs?: number;
  /** One plotted point per series each sample. Default 1 000 ms. */
  sampleMs?: number;
}

/** A browser's user agent: the clicks are people's, not bots' (bots are kept but counted apart). */
const BROWSER_UA =
  "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36";
/** Far above what one process can click: the edge's per-client filter stays out of the picture. */
const SCENARIO_PER_CLIENT = { ratePerS: 1_000_000, burst: 1_000_000 };

interface PhaseResult {
  clicks: number;
  failed: number;
  originRequests: number;
  durationS: number;
  counted: number;
}

async function originRequests(origin: RunningSystem): Promise<number> {
  const { values } = await origin.metrics.redirects.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** Clicks counted in the origin's click log for these codes (bots excluded; none here). */
async function countedClicks(
  origin: RunningSystem,
  domain: string,
  codes: readonly string[],
): Promise<number> {
  const store = origin.clicks?.store;
  if (store === undefined) throw new Error("the private origin runs without its click pipeline");
  let total = 0;
  for (const code of codes) total += (await store.rawTotals(domain, code)).clicks;
  return total;
}

async function createLinks(origin: RunningSystem, count: number, maxAgeS: number): Promise<string[]> {
  const apiKey = origin.bootstrap?.apiKey;
  if (apiKey === undefined) throw new Error("the private origin made no demo workspace");
  const codes: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await fetch(`${origin.url}/v1/links`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ url: `https://example.com/scenario/${i}`, cacheMaxAgeS: maxAgeS }),
    });
    if (res.status !== 201) throw new Error(`creating a link answered ${res.status}: ${await res.text()}`);
    codes.push(((await res.json()) as { code: string }).code);
  }
  return codes;
}

/**
 * Clicks `codes` round-robin at `base` with `concurrency` loops for `ms`, plotting clicks/s
 * and the origin's requests/s each sample. A click is a 3xx answer; anything else is counted failed.
 */
async function clickPhase(
  ctx: ScenarioContext,
  run: { origin: RunningSystem; base: string; codes: readonly string[]; startedMs: number },
  phase: { label: string; ms: number; concurrency: number; sampleMs: number; progress: [number, number] },
): Promise<Omit<PhaseResult, "counted">> {
  const { origin, base, codes, startedMs } = run;
  let clicks = 0;
  let failed = 0;
  let next = 0;
  const originBefore = await originRequests(origin);
  const phaseStart = performance.now();
  const endMs = phaseStart + phase.ms;
  const loop = async () => {
    while (performance.now() < endMs && !ctx.signal.aborted) {
      const code = codes[next++ % codes.length]!;
      try {
        const res = await fetch(`${base}/${code}`, {
          redirect: "manual",
          headers: { "user-agent": BROWSER_UA },
          signal: ctx.signal,
        });
        await res.body?.cancel();
        if (res.status >= 300 && res.status < 400) clicks++;
        else failed++;
      } catch {
        if (ctx.signal.aborted) return;
        failed++;
      }
    }
  };
  const sampler = async () => {
    let lastClicks = 0;
    let lastOrigin = originBefore;
    let lastMs = phaseStart;
    while (performance.now() < endMs && !ctx.signal.aborted) {
      await sleep(Math.min(phase.sampleMs, Math.max(1, endMs - performance.now())), undefined, {
        signal: ctx.signal,
      }).catch(() => undefined);
      const nowMs = performance.now();
      const seconds = (nowMs - lastMs) / 1_000;
      const served = await originRequests(origin);
      const x = Math.round(nowMs - startedMs) / 1_000;
      ctx.point(`clicks/s, ${phase.label}`, x, Math.round((clicks - lastClicks) / seconds));
      ctx.point(`origin requests/s, ${phase.label}`, x, Math.round((served - lastOrigin) / seconds));
      lastClicks = clicks;
      lastOrigin = served;
      lastMs = nowMs;
      const [from, to] = phase.progress;
      ctx.progress(from + ((to - from) * Math.min(phase.ms, nowMs - phaseStart)) / phase.ms);
    }
  };
  await Promise.all([sampler(), ...Array.from({ length: phase.concurrency }, loop)]);
  const durationS = (performance.now() - phaseStart) / 1_000;
  return { clicks, failed, originRequests: (await originRequests(origin)) - originBefore, durationS };
}

/** Polls the click log until it holds `expected` clicks or `maxMs` passed; returns what it holds. */
async function waitCounted(
  ctx: ScenarioContext,
  origin: RunningSystem,
  domain: string,
  codes: readonly string[],
  expected: number,
  maxMs: number,
): Promise<number> {
  const deadline = performance.now() + maxMs;
  let counted = await countedClicks(origin, domain, codes);
  while (counted < expected && performance.now() < deadline && !ctx.signal.aborted) {
    await sleep(200, undefined, { signal: ctx.signal }).catch(() => undefined);
    counted = await countedClicks(origin, domain, codes);
  }
  return counted;
}

export function edgeOnOffScenario(options: EdgeOnOffOptions): Scenario {
  const codeCount = options.codes ?? 4;
  const maxAgeS = options.maxAgeS ?? 2;
  const edgeOnMs = options.edgeOnMs ?? 10_000;
  const edgeOffMs = options.edgeOffMs ?? 6_000;
  const concurrency = options.concurrency ?? 8;
  const countMaxMs = options.countMaxMs ?? 15_000;
  const sampleMs = options.sampleMs ?? 1_000;
  return {
    id: EDGE_ON_OFF_ID,
    title: "The edge on and off: origin requests against clicks",
    line: `Clicks on ${codeCount} codes (max-age ${maxAgeS} s) through a private nginx edge for ${edgeOnMs / 1_000} s, then straight at a private origin for ${edgeOffMs / 1_000} s: origin requests/s against clicks/s, and every click counted either way.`,
    xLabel: "s from the start",
    yLabel: "per second",
    run: async (ctx) => {
      const dir = await mkdtemp(join(tmpdir(), "casebook-us-edge-on-off-"));
      let nginx: SpawnedNginx | undefined;
      let origin: RunningSystem | undefined;
      try {
        const originPort = await freePort();
        let domain = "";
        nginx = await spawnNginx({
          install: false,
          main: edgeMainDirectives(),
          http: (edgePort, nginxDir) => {
            domain = `localhost:${edgePort}`;
            return edgeHttpBlock({
              port: edgePort,
              dir: nginxDir,
              origin: `127.0.0.1:${originPort}`,
              domains: [domain],
              token: "edge-on-off-scenario",
              accessLog: join(dir, "clicks.log"),
              perClient: SCENARIO_PER_CLIENT,
            });
          },
          readyPath: "/healthz",
        });
        ctx.progress(0.05);
        origin = await options.start({
          PORT: String(originPort),
          LOG_LEVEL: "silent",
          CASEBOOK_DATA: join(dir, "data"),
          URL_SHORTENER_DOMAINS: `http://${domain}`,
          URL_SHORTENER_EDGE_TOKEN: "edge-on-off-scenario",
          URL_SHORTENER_EDGE_ACCESS_LOG: join(dir, "clicks.log"),
          URL_SHORTENER_EDGE_INGEST_INTERVAL_MS: "200",
          URL_SHORTENER_CLICK_FLUSH_INTERVAL_MS: "200",
        });
        const codes = await createLinks(origin, codeCount, maxAgeS);
        ctx.progress(0.1);
        const startedMs = performance.now();
        const run = { origin, codes, startedMs };
        const on = await clickPhase(
          ctx,
          { ...run, base: nginx.url },
          { label: "edge on", ms: edgeOnMs, concurrency, sampleMs, progress: [0.1, 0.5] },
        );
        const onCounted = await waitCounted(ctx, origin, domain, codes, on.clicks, countMaxMs);
        const off = await clickPhase(
          ctx,
          { ...run, base: origin.url },
          { label: "edge off", ms: edgeOffMs, concurrency, sampleMs, progress: [0.55, 0.9] },
        );
        const total = await waitCounted(ctx, origin, domain, codes, on.clicks + off.clicks, countMaxMs);
        ctx.progress(1);
        return sentence(
          { ...on, counted: onCounted },
          { ...off, counted: total - onCounted },
          { codes: codeCount, maxAgeS },
        );
      } finally {
        await Promise.allSettled([nginx?.stop()]);
        await Promise.allSettled([origin?.close()]);
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}

function sentence(on: PhaseResult, off: PhaseResult, shape: { codes: number; maxAgeS: number }): string {
  const windows = on.durationS / shape.maxAgeS;
  const perWindow = on.originRequests / shape.codes / windows;
  const failed = on.failed + off.failed;
  return (
    `With the edge: ${on.clicks} clicks on ${shape.codes} codes in ${on.durationS.toFixed(1)} s reached the origin ` +
    `${on.originRequests} times — ${perWindow.toFixed(2)} origin requests per code per ${shape.maxAgeS} s max-age window; ` +
    `${on.counted} of ${on.clicks} clicks counted (from the edge's log). ` +
    `Without it: ${off.clicks} clicks in ${off.durationS.toFixed(1)} s, ${off.originRequests} origin requests; ` +
    `${off.counted} of ${off.clicks} clicks counted (the origin's own records). ` +
    `${failed} clicks failed.`
  );
}
