/**
 * Issue 17 in `casebook up`: a system whose manifest `calls` another (flash-sale → payments) is
 * started with the callee's URL and a key minted for it, and the callee, which `grants` keys, is
 * given every caller's key as `caller=key,…`. The wiring as a plan (`wireCalls`), the manifest's
 * checks, then through the real CLI with fixture services that echo what they were given.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { wireCalls } from "../src/call-plan.ts";
import { discoverSystems } from "../src/discover-systems.ts";
import { planLaunch } from "../src/launch-plan.ts";
import { parseManifest } from "../src/manifest.ts";
import { keptWiringKeys } from "../src/wiring-keys.ts";
import { envEchoMain, makeFixtureRoot, removeFixtureRoot, upOnFreePorts } from "./fixtures.ts";

const callsBank = [{ system: "bank", urlEnv: "BANK_URL", apiKeyEnv: "BANK_KEY" }];
const grants = {
  apiKeyEnv: "BANK_CALLER_KEYS",
  apiKeyKind: "bk",
  callerNote: "{caller} banks at {url} with {key}",
};

const echoMain = envEchoMain({ url: "BANK_URL", key: "BANK_KEY", granted: "BANK_CALLER_KEYS" });

function fixture() {
  return makeFixtureRoot([
    { name: "bank", files: { "src/main.ts": echoMain }, manifest: { grants } },
    { name: "shop", files: { "src/main.ts": echoMain }, manifest: { calls: callsBank } },
    {
      name: "till",
      files: { "src/main.ts": echoMain },
      manifest: { calls: [{ ...callsBank[0], unlessSet: ["TILL_OWN_BANK"] }] },
    },
    {
      name: "loner",
      files: { "src/main.ts": echoMain },
      manifest: { calls: [{ system: "nowhere", urlEnv: "BANK_URL", apiKeyEnv: "BANK_KEY" }] },
    },
  ]);
}

test("the manifest's calls and grants blocks are checked field by field", () => {
  const parse = (casebook: Record<string, unknown>) =>
    parseManifest(
      { name: "@casebook/w", casebook: { title: "w", status: "working", port: 8101, ...casebook } },
      "w/package.json",
      "w",
    );
  assert.deepEqual(parse({ calls: callsBank, grants }).manifest?.calls, callsBank);
  assert.deepEqual(parse({ calls: callsBank, grants }).manifest?.grants, grants);
  assert.deepEqual(parse({ calls: [{ system: "bank", urlEnv: "BANK_URL" }] }).manifest?.calls, [
    { system: "bank", urlEnv: "BANK_URL" },
  ]);
  assert.deepEqual(
    parse({
      calls: [{ system: "Bank!", urlEnv: "url", apiKeyEnv: 3, extra: 1 }],
      grants: { apiKeyEnv: "K", apiKeyKind: "Not a kind" },
    }).problems,
    [
      'w/package.json: field "casebook.calls[0].extra" is not known (known: system, urlEnv, apiKeyEnv, unlessSet)',
      'w/package.json: field "casebook.calls[0].system" must be a system\'s folder name like "payments", got "Bank!"',
      'w/package.json: field "casebook.calls[0].urlEnv" must be an UPPER_SNAKE_CASE variable name, got "url"',
      'w/package.json: field "casebook.calls[0].apiKeyEnv" must be an UPPER_SNAKE_CASE variable name, got 3',
      'w/package.json: field "casebook.grants.apiKeyKind" must be a key kind like "mtk" (1–8 lower-case letters), got "Not a kind"',
    ],
  );
  assert.match(parse({ calls: "payments" }).problems[0]!, /casebook\.calls" must be a list/);
  assert.deepEqual(
    parse({ calls: [{ system: "bank", urlEnv: "BANK_URL", unlessSet: ["OK", "no"] }] }).problems,
    [
      'w/package.json: field "casebook.calls[0].unlessSet[1]" must be an UPPER_SNAKE_CASE variable name, got "no"',
    ],
  );
  assert.match(parse({ grants: "yes" }).problems[0]!, /casebook\.grants" must be an object/);
  assert.deepEqual(parse({ grants: { ...grants, callerNote: "no caller named" } }).problems, [
    'w/package.json: field "casebook.grants.callerNote" must be a string naming {caller}, got "no caller named"',
  ]);
});

test("wireCalls: each caller gets the callee's URL and a key of its own, the callee every key; the caller's values win", (t) => {
  const root = fixture();
  t.after(() => removeFixtureRoot(root));
  const keysFile = join(root, ".casebook-data", "wiring-keys.json");
  const plan = (env: NodeJS.ProcessEnv, names: string[] = []) => {
    const { plans } = planLaunch(discoverSystems(root), {
      root,
      names,
      host: "127.0.0.1",
      portOverrides: new Map<string, number>(),
      honourPortEnv: false,
      args: [],
      env,
    });
    wireCalls(plans, { env, keys: keptWiringKeys(keysFile, randomBytes) });
    const by = (name: string) => plans.find((p) => p.name === name)?.env ?? {};
    return { bank: by("bank"), shop: by("shop"), till: by("till"), loner: by("loner"), plans };
  };
  const env = { PATH: "/usr/bin" };
  const { bank, shop, till, loner, plans } = plan(env);
  const bankUrl = plans.find((p) => p.name === "bank")!.url;
  assert.equal(shop.BANK_URL, bankUrl);
  assert.equal(till.BANK_URL, bankUrl);
  assert.ok(apiKeyScheme("bk").parse(shop.BANK_KEY), "a key of the kind the callee grants");
  assert.notEqual(shop.BANK_KEY, till.BANK_KEY, "one key per caller");
  assert.equal(bank.BANK_CALLER_KEYS, `shop=${shop.BANK_KEY},till=${till.BANK_KEY}`);
  assert.equal(bank.BANK_KEY, undefined, "the callee holds no caller's key as its own");
  assert.equal(loner.BANK_URL, undefined, "a callee not launched: nothing set");
  assert.equal(loner.BANK_KEY, undefined);
  assert.deepEqual(
    plans.find((p) => p.name === "bank")!.callerNotes,
    [`shop banks at ${bankUrl} with ${shop.BANK_KEY}`, `till banks at ${bankUrl} with ${till.BANK_KEY}`],
    "the callee's note, one line per caller, below up's table",
  );

  const alone = plan(env, ["shop"]);
  assert.equal(alone.shop.BANK_URL, undefined, "the callee not in this launch: the caller keeps its default");
  assert.equal(plan(env).shop.BANK_KEY, shop.BANK_KEY, "the same key at the next launch: none piles up");
  rmSync(keysFile);
  assert.notEqual(plan(env).shop.BANK_KEY, shop.BANK_KEY, "the kept keys' file deleted: new keys");

  // The user's key is kept and not granted (it is theirs to have registered); their grant list is kept, ours added.
  const mine = plan({ ...env, BANK_KEY: "bk_mine", BANK_CALLER_KEYS: "ops=bk_ops" });
  assert.equal(mine.shop.BANK_KEY, "bk_mine");
  assert.equal(mine.shop.BANK_URL, bankUrl);
  assert.equal(mine.bank.BANK_CALLER_KEYS, "ops=bk_ops");
  // The user's URL: the caller calls a service of their choosing, so no key of ours goes to it.
  const elsewhere = plan({ ...env, BANK_URL: "http://bank.example:9" });
  assert.equal(elsewhere.shop.BANK_URL, "http://bank.example:9");
  assert.equal(elsewhere.shop.BANK_KEY, undefined);
  assert.equal(elsewhere.bank.BANK_CALLER_KEYS, undefined);
  // A variable of the call's unlessSet: that caller is left alone, the others wired.
  const own = plan({ ...env, TILL_OWN_BANK: "yes" });
  assert.equal(own.till.BANK_URL, undefined);
  assert.equal(own.till.BANK_KEY, undefined);
  assert.equal(own.bank.BANK_CALLER_KEYS, `shop=${own.shop.BANK_KEY}`);
});

test("casebook up gives the caller the callee's URL and a key, and the callee the same key as granted", async (t) => {
  const root = fixture();
  t.after(() => removeFixtureRoot(root));
  const up = await upOnFreePorts(t, root, ["bank", "shop"], ["bank", "shop", "--no-console"]);
  const shop = await up.given("shop");
  assert.equal(shop.url, `http://127.0.0.1:${up.ports.bank}`);
  assert.ok(apiKeyScheme("bk").parse(shop.key));
  assert.equal((await up.given("bank")).granted, `shop=${shop.key}`);
  await up.printed(
    new RegExp(`caller: shop banks at http://127\\.0\\.0\\.1:${up.ports.bank} with ${shop.key}`),
  );
});

test("this repository's calls name systems that exist, and every keyed call a callee that grants keys", () => {
  const systems = discoverSystems(join(import.meta.dirname, "..", "..", ".."));
  const calls = systems.flatMap((s) => s.manifest.calls.map((call) => ({ caller: s.name, ...call })));
  assert.ok(
    calls.some((c) => c.caller === "flash-sale" && c.system === "payments"),
    "issue 17's pair is declared",
  );
  for (const call of calls) {
    const callee = systems.find((s) => s.name === call.system);
    assert.ok(callee, `${call.caller} calls ${call.system}, which is no system`);
    if (call.apiKeyEnv !== undefined)
      assert.ok(callee.manifest.grants, `${call.system} grants no key to ${call.caller}`);
  }
});
