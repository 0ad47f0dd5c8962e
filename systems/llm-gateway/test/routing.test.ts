/**
 * Routing through the API with the `openai` SDK (LG-08, LG-09, LG-10, LG-19): a breaker per
 * deployment on TTFT and errors, a chain of fallbacks walked in order, equal deployments
 * balanced, a fallback declared in a header and counted, 429 + Retry-After only when no
 * deployment has capacity. Two provider simulators stand for two destinations ("default",
 * the fixture's, and "west").
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { seededRandom } from "@casebook/kit/random";
import OpenAI from "openai";
import { alertRules, prometheusRuleFile, seriesOf } from "../src/alert-rules.ts";
import { ACCEPT_MODEL_FALLBACK_HEADER, FALLBACK_HEADER, SERVED_BY_HEADER } from "../src/api/routing.ts";
import { defaultModelProfile } from "../src/sim/provider-behaviour.ts";
import { createProviderSim, type ProviderSim } from "../src/sim/provider-sim.ts";
import { type GatewayFixture, startGateway } from "./gateway-fixture.ts";

const ADMIN = "admin-token-for-the-routing-tests-0123456789";
const fast = { ...defaultModelProfile, ttftMs: 5, tokensPerS: 2_000, answerTokens: 5 };
let f: GatewayFixture;
let west: ProviderSim;
let westUrl: string;

async function setWest(model: string, patch: Partial<typeof fast>): Promise<void> {
  const res = await fetch(`${westUrl}/admin/models/${model}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(patch),
  });
  assert.equal(res.status, 200, await res.text());
}

before(async () => {
  west = createProviderSim({
    rng: seededRandom(2),
    log: { level: "silent" },
    behaviour: { models: { "gpt-4o": fast, "own-llama": fast, "bal-4o": fast, "strict-4o": fast } },
  });
  westUrl = (await west.listen({ port: 0 })).url;
  f = await startGateway({
    models: [
      // LG-08: a slow primary, a smaller model behind it.
      "slowchain=slow-4o>gpt-4o-mini",
      // LG-09: the same model elsewhere → a smaller model → the own endpoint.
      "chain=gpt-4o>gpt-4o@west>mini-c>own-llama@west",
      // equal deployments of one model, balanced.
      "balanced=bal-4o|bal-4o@west",
      // LG-10: a primary that always fails, so every request falls back.
      "declared=broken-4o>mini-d",
      // LG-19: the breaker picks the deployment at run time.
      "healing=heal-4o>mini-h",
      // LG-16: a primary answering 5xx, another answering 429, the same fallback behind both.
      "alarm=alarm-4o>mini-a",
      "limited=lim-4o>mini-a",
      // LG-10's opt-out: the same model on two destinations, a smaller model behind them.
      "strict=strict-4o>strict-4o@west>mini-s",
    ].join(","),
    env: {
      LLM_GATEWAY_ADMIN_TOKEN: ADMIN,
      LLM_GATEWAY_DESTINATIONS: `west=${westUrl}/v1`,
      LLM_GATEWAY_BREAKER_TTFT_MS: "1000",
      LLM_GATEWAY_BREAKER_FAILURES: "2",
      LLM_GATEWAY_BREAKER_OPEN_MS: "3000",
    },
    profile: { answerTokens: 5 },
  });
  // 1.5 s to the first token against a 1 s bound: the breaker opens at 1 s for 3 s, and the rest of
  // LG-08's fault test must run inside that (with a 2.5 s TTFT a loaded host left it ~1.4 s).
  await f.setModel("slow-4o", { ttftMs: 1_500 });
  for (const model of ["mini-c", "mini-d", "mini-h"]) await f.setModel(model, {});
  await f.setModel("heal-4o", { errorRate: 1 });
  await f.setModel("broken-4o", { errorRate: 1 });
  await f.setModel("bal-4o", {});
  await f.setModel("mini-a", {});
  await f.setModel("alarm-4o", { errorRate: 1 });
  await f.setModel("lim-4o", { rateLimitRate: 1 });
  await f.setModel("strict-4o", { errorRate: 1 });
  await f.setModel("mini-s", {});
});
after(async () => {
  await f?.close();
  await west?.close();
});

const messages = [{ role: "user" as const, content: "Say something short." }];

async function destinations(): Promise<Map<string, { state: string; inFlight: number }>> {
  const res = await fetch(`${f.gateway.url}/v1/admin/destinations`, {
    headers: { authorization: `Bearer ${ADMIN}` },
  });
  assert.equal(res.status, 200);
  const body = (await res.json()) as {
    destinations: Array<{ deployment: string; state: string; inFlight: number }>;
  };
  return new Map(body.destinations.map((d) => [d.deployment, d]));
}

async function metric(prefix: string): Promise<number> {
  const text = await (await fetch(`${f.gateway.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(prefix));
  return Number(line?.split(" ").at(-1) ?? 0);
}

async function streamed(model: string) {
  const { data, response } = await f.client.chat.completions
    .create({ model, messages, stream: true, max_tokens: 5 })
    .withResponse();
  let text = "";
  for await (const chunk of data) text += chunk.choices[0]?.delta?.content ?? "";
  return {
    text,
    servedBy: response.headers.get(SERVED_BY_HEADER),
    fallback: response.headers.get(FALLBACK_HEADER),
  };
}

async function whole(model: string) {
  const { data, response } = await f.client.chat.completions
    .create({ model, messages, max_tokens: 5 })
    .withResponse();
  return {
    model: data.model,
    servedBy: response.headers.get(SERVED_BY_HEADER),
    fallback: response.headers.get(FALLBACK_HEADER),
  };
}

test("LG-08 fault: a provider slow to its first token opens its breaker; the fallback is taken, visible at the admin endpoint and in metrics", async () => {
  // Two streams whose first token comes at 1.5 s against a 1 s bound: two failures open it.
  const slow = await Promise.all([streamed("slowchain"), streamed("slowchain")]);
  for (const answer of slow) {
    assert.equal(answer.servedBy, "slow-4o@default");
    assert.ok(answer.text.length > 0, "a slow answer still completes");
  }
  assert.equal((await destinations()).get("slow-4o@default")?.state, "open");
  assert.equal(await metric('llm_gateway_destination_state{deployment="slow-4o@default"}'), 2);
  const generated = (await f.generations()).length;
  const next = await streamed("slowchain");
  assert.equal(next.servedBy, "gpt-4o-mini@default", "the open deployment is not called");
  assert.equal(next.fallback, "model; from=slow-4o@default");
  const calls = (await f.generations()).slice(generated).map((g) => g.model);
  assert.deepEqual(calls, ["gpt-4o-mini"], "nothing was sent to the slow model");
  assert.equal(
    await metric('llm_gateway_breaker_transitions_total{deployment="slow-4o@default",to="open"'),
    1,
  );
});

test("LG-09 the chain is walked in order: same model elsewhere → a smaller model → the own endpoint", async () => {
  assert.deepEqual(await whole("chain"), { model: "gpt-4o", servedBy: "gpt-4o@default", fallback: null });
  await f.setModel("gpt-4o", { errorRate: 1 });
  const elsewhere = await whole("chain");
  assert.equal(elsewhere.servedBy, "gpt-4o@west");
  assert.equal(elsewhere.fallback, "destination; from=gpt-4o@default");
  await setWest("gpt-4o", { errorRate: 1 });
  const smaller = await whole("chain");
  assert.equal(smaller.servedBy, "mini-c@default");
  assert.equal(smaller.fallback, "model; from=gpt-4o@default");
  assert.equal(smaller.model, "mini-c", "the answer names the model that wrote it");
  await f.setModel("mini-c", { rateLimitRate: 1 });
  const own = await whole("chain");
  assert.equal(own.servedBy, "own-llama@west");
  assert.equal(own.fallback, "model; from=gpt-4o@default");
  await f.setModel("mini-c", { rateLimitRate: 0 });
  await setWest("gpt-4o", { errorRate: 0 });
});

test("LG-09 429 with Retry-After only when no destination has capacity", async () => {
  await setWest("own-llama", { rateLimitRate: 1 });
  await f.setModel("mini-c", { rateLimitRate: 1 });
  await setWest("gpt-4o", { rateLimitRate: 1 });
  // gpt-4o@default: breaker open after the failures above; the rest answer 429.
  await assert.rejects(
    f.client.chat.completions.create({ model: "chain", messages, max_tokens: 5 }),
    (error: unknown) =>
      error instanceof OpenAI.RateLimitError &&
      error.code === "rate_limit_exceeded" &&
      Number(error.headers.get("retry-after")) >= 1 &&
      /no destination of chain has capacity/i.test(error.message),
  );
  // One destination with room is enough.
  await setWest("own-llama", { rateLimitRate: 0 });
  assert.equal((await whole("chain")).servedBy, "own-llama@west");
  await f.setModel("mini-c", { rateLimitRate: 0 });
  await setWest("gpt-4o", { rateLimitRate: 0 });
});

test("LG-09 equal deployments of one model share the load; neither is a fallback", async () => {
  // Whole answers (no TTFT bound): a loaded machine cannot open a breaker here.
  const answers = await Promise.all(Array.from({ length: 8 }, () => whole("balanced")));
  const by = new Map<string, number>();
  for (const a of answers) {
    assert.equal(a.fallback, null);
    by.set(a.servedBy ?? "", (by.get(a.servedBy ?? "") ?? 0) + 1);
  }
  assert.ok((by.get("bal-4o@default") ?? 0) >= 2, JSON.stringify([...by]));
  assert.ok((by.get("bal-4o@west") ?? 0) >= 2, JSON.stringify([...by]));
});

test("LG-10 a fallback to another model is declared (header) and recorded (metric, log)", async () => {
  const series = 'llm_gateway_fallbacks_total{model="declared",to="mini-d@default",kind="model"}';
  for (const answer of [await whole("declared"), await streamed("declared")]) {
    assert.equal(answer.servedBy, "mini-d@default");
    assert.equal(answer.fallback, "model; from=broken-4o@default");
  }
  assert.equal(await metric(series), 2);
});

test("LG-10 which clients accept a downgrade is the tenant's choice (and a request may refuse one): the same model elsewhere still serves, another model never does", async () => {
  const created = await fetch(`${f.gateway.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "no-downgrades", name: "strict", acceptsModelFallback: false }),
  });
  const text = await created.text();
  assert.equal(created.status, 201, text);
  const { apiKey } = JSON.parse(text) as { apiKey: { key: string } };
  const strict = new OpenAI({ baseURL: `${f.gateway.url}/v1`, apiKey: apiKey.key, maxRetries: 0 });
  const ask = (client: OpenAI, headers: Record<string, string> = {}) =>
    client.chat.completions.create({ model: "strict", messages, max_tokens: 5 }, { headers }).withResponse();
  const refusedWithoutDowngrade = async (attempt: Promise<unknown>) => {
    const before = (await f.generations()).filter((g) => g.model === "mini-s").length;
    await assert.rejects(
      attempt,
      (error: unknown) => error instanceof OpenAI.APIError && [429, 502].includes(error.status ?? 0),
    );
    const after = (await f.generations()).filter((g) => g.model === "mini-s").length;
    assert.equal(after, before, "the smaller model was never called");
  };

  // strict-4o@default fails: the same model on west is not a downgrade, so it serves.
  const elsewhere = await ask(strict);
  assert.equal(elsewhere.response.headers.get(SERVED_BY_HEADER), "strict-4o@west");
  assert.equal(elsewhere.response.headers.get(FALLBACK_HEADER), "destination; from=strict-4o@default");

  // Both deployments of the model fail: the default tenant is served by mini-s (declared);
  // the strict tenant gets the model's own error, and so does a request that refuses.
  await setWest("strict-4o", { errorRate: 1 });
  await refusedWithoutDowngrade(ask(strict));
  await refusedWithoutDowngrade(ask(f.client, { [ACCEPT_MODEL_FALLBACK_HEADER]: "false" }));
  await refusedWithoutDowngrade(ask(strict, { [ACCEPT_MODEL_FALLBACK_HEADER]: "true" }));
  const downgraded = await ask(f.client);
  assert.equal(downgraded.response.headers.get(SERVED_BY_HEADER), "mini-s@default");
  assert.equal(downgraded.response.headers.get(FALLBACK_HEADER), "model; from=strict-4o@default");

  // A value that is neither true nor false: 400 naming the header, nothing reserved or called.
  await assert.rejects(
    ask(f.client, { [ACCEPT_MODEL_FALLBACK_HEADER]: "maybe" }),
    (error: unknown) =>
      error instanceof OpenAI.BadRequestError && error.param === ACCEPT_MODEL_FALLBACK_HEADER,
  );
  await setWest("strict-4o", { errorRate: 0 });
});

test("LG-19 the breaker picks the destination at run time: a failing primary is passed over, and a healed one serves again after its probe", async () => {
  for (let i = 0; i < 2; i++) assert.equal((await whole("healing")).servedBy, "mini-h@default");
  assert.equal((await destinations()).get("heal-4o@default")?.state, "open");
  await f.setModel("heal-4o", { errorRate: 0 });
  await new Promise((resolve) => setTimeout(resolve, 3_100));
  const healed = await whole("healing");
  assert.equal(healed.servedBy, "heal-4o@default", "the probe went to the primary");
  assert.equal(healed.fallback, null);
  assert.equal((await destinations()).get("heal-4o@default")?.state, "closed");
});

test("LG-16 per-model metrics feed the breaker and the alarms: 5xx and 429 per model and deployment, TTFT per deployment, the breaker's outcomes and state", async () => {
  const series = (name: string, labels: string) => metric(`${name}{${labels}}`);
  for (let i = 0; i < 3; i++) {
    const answer = await streamed("alarm");
    assert.equal(answer.servedBy, "mini-a@default");
  }
  // The breaker opened after two failures (LLM_GATEWAY_BREAKER_FAILURES=2): the third request skipped it.
  assert.equal(
    await series(
      "llm_gateway_upstream_failures_total",
      'model="alarm",deployment="alarm-4o@default",kind="5xx"',
    ),
    2,
  );
  assert.equal(
    await series("llm_gateway_breaker_outcomes_total", 'deployment="alarm-4o@default",outcome="failure"'),
    2,
  );
  assert.equal(await series("llm_gateway_destination_state", 'deployment="alarm-4o@default"'), 2, "open");
  assert.equal(await series("llm_gateway_deployment_ttft_seconds_count", 'deployment="mini-a@default"'), 3);
  assert.equal(await series("llm_gateway_ttft_seconds_count", 'model="alarm"'), 3);
  const limited = await streamed("limited");
  assert.equal(limited.servedBy, "mini-a@default");
  assert.equal(
    await series(
      "llm_gateway_upstream_failures_total",
      'model="limited",deployment="lim-4o@default",kind="429"',
    ),
    1,
  );
  // The alarms read only series the gateway exports, and the breaker alarm's condition holds now.
  const exported = await (await fetch(`${f.gateway.url}/metrics`)).text();
  for (const rule of alertRules)
    for (const name of seriesOf(rule))
      assert.ok(
        exported.includes(`# TYPE ${name} `),
        `${rule.alert} reads ${name}, which /metrics does not export`,
      );
  assert.match(
    prometheusRuleFile(),
    /alert: LlmDeploymentBreakerOpen\n {8}expr: "max by \(deployment\) \(llm_gateway_destination_state\) == 2"/,
  );
});
