/**
 * The bench's load generator against the provider simulator: its two times are taken in the
 * read that carries the event (first content, `data: [DONE]`), so the total of a stream paced
 * by the simulator is its pace and not the generator's own work; a refusal and a stream that
 * ends without `[DONE]` are errors, never a finished stream.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import { phaseOf, phaseWait, runStreams, summaryMs } from "../bench/stream-load-child.ts";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../src/sim/provider-sim.ts";

let sim: ProviderSim;
let url: string;

const PACE = { ttftMs: 40, tokensPerS: 200, answerTokens: 20 } as const;

before(async () => {
  sim = createProviderSim({
    rng: seededRandom(1),
    log: { level: "silent" },
    behaviour: {
      models: {
        "gpt-4o-mini": { ...defaultModelProfile, ...PACE },
        "gpt-4o": { ...defaultModelProfile, ...PACE, cutAfterTokens: 3 },
      },
    },
  });
  ({ url } = await sim.listen({ port: 0 }));
});
after(() => sim.close());

function command(model: string, overrides: { url?: string; headers?: Record<string, string> } = {}) {
  return {
    cmd: "run" as const,
    url: overrides.url ?? `${url}/v1/chat/completions`,
    headers: overrides.headers ?? { authorization: "Bearer sk-bench" },
    model,
    concurrency: 4,
    spreadStartMs: 100,
    durationMs: 1_500,
    warmupMs: 200,
    promptWords: 50,
    promptSeed: "t",
    maxTokens: 100,
    temperature: 0.7,
  };
}

test("streams paced by the simulator: TTFT from its first token, total from its [DONE], no errors", async () => {
  const result = await runStreams(command("gpt-4o-mini"));
  assert.equal(result.errors, 0, result.firstError);
  assert.ok(result.ok >= 8, `ok ${result.ok}`);
  // 20 tokens at 200/s after 40 ms: the first at ≥ 40 ms, [DONE] ≥ 19 intervals of 5 ms later.
  assert.ok(result.ttftMs.p50 >= PACE.ttftMs, `ttft p50 ${result.ttftMs.p50}`);
  const paced = PACE.ttftMs + ((PACE.answerTokens - 1) * 1000) / PACE.tokensPerS;
  assert.ok(result.totalMs.p50 >= paced, `total p50 ${result.totalMs.p50} < ${paced}`);
  // Measured to the [DONE], not to a later close (seconds): the slack is a loaded host's, not the pace's.
  assert.ok(result.totalMs.p50 < paced + 500, `total p50 ${result.totalMs.p50}`);
});

test("a stream cut before [DONE] is an error, not a finished stream", async () => {
  const result = await runStreams(command("gpt-4o"));
  assert.equal(result.ok, 0);
  assert.ok(result.errors > 0);
  assert.match(result.firstError ?? "", /without data: \[DONE\]|socket hang up|aborted/);
});

test("a refusal is an error naming its status", async () => {
  const result = await runStreams(command("no-such-model"));
  assert.equal(result.ok, 0);
  assert.match(result.firstError ?? "", /^404: /);
});

test("percentiles are exact ranks: a 0.1 ms difference between two runs is not rounded away", () => {
  const base = Array.from({ length: 200 }, (_, i) => 5_050 + i / 100);
  const a = summaryMs(base);
  const b = summaryMs(base.map((t) => t + 0.1));
  assert.equal(a.count, 200);
  assert.equal(a.p50, 5_050.99); // the 100th of 200, nearest rank
  assert.equal(a.p99, 5_051.97);
  assert.equal(a.max, 5_051.99);
  assert.ok(Math.abs(b.p50 - a.p50 - 0.1) < 1e-9, `${b.p50 - a.p50}`);
  assert.deepEqual(summaryMs([]), { p50: 0, p99: 0, max: 0, count: 0 });
});

test("the phase waits spread requests over the whole millisecond, the same for every run, and keep the loop turning", async () => {
  const quarters = [0, 0, 0, 0];
  for (let index = 0; index < 400; index++) {
    const ms = phaseOf(index);
    assert.ok(ms >= 0 && ms < 1, `${ms}`);
    assert.equal(phaseOf(index), ms); // every target's request `index` waits as long
    quarters[Math.floor(ms * 4)]! += 1;
  }
  for (const n of quarters) assert.ok(n >= 70 && n <= 130, `waits per quarter-millisecond: ${quarters}`);
  const index = Array.from({ length: 400 }, (_, i) => i).find((i) => phaseOf(i) >= 0.5)!;
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  const begun = performance.now();
  await phaseWait(index);
  assert.ok(performance.now() - begun >= phaseOf(index));
  assert.ok(turned, "the streams' reads run while a request waits");
});
