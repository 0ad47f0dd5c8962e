/**
 * US-16 through main() (PGlite): only http(s) targets; the blocklist (domains with their
 * subdomains, substrings, the shortener's own domains) checked before a link is stored; the
 * verifier is pluggable (a Safe-Browsing-like service implements the same interface);
 * creation rate-limited per API key; an admin disables a link without deleting it.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { TargetVerifier } from "../src/domain/target-verifier.ts";
import { ADMIN_TOKEN, type ApiWorld, apiWorld, DOMAIN_A } from "./api-fixture.ts";

let world: ApiWorld;
let key = "";
/** A stand-in for a remote reputation service: asynchronous, with its own verdicts. */
const checked: string[] = [];
const remoteVerifier: TargetVerifier = {
  async verify(url) {
    checked.push(url.href);
    await new Promise((resolve) => setImmediate(resolve));
    if (url.hostname.endsWith("phishy.test")) return { allowed: false, reason: "reported as phishing" };
    if (url.hostname === DOMAIN_A.split(":")[0]) return { allowed: false, reason: "own domain" };
    return { allowed: true };
  },
};

before(async () => {
  world = await apiWorld({ URL_SHORTENER_CREATE_BURST: "5", URL_SHORTENER_CREATE_RATE_PER_S: "0.01" });
  key = await world.workspace("acme");
});
after(() => world?.close());

async function linkCount(): Promise<number> {
  const { rows } = await world.running.db.query<{ n: number }>("SELECT count(*)::int AS n FROM links");
  return rows[0]!.n;
}

test("US-16 only http(s) targets; blocked domains, subdomains and patterns are refused before anything is stored", async () => {
  const before = await linkCount();
  const ownKey = await world.workspace("lists");
  const refused: [string, number][] = [
    ["javascript:alert(document.cookie)", 400],
    ["data:text/html,<script>", 400],
    ["https://evil.test/login", 422],
    ["https://login.evil.test/", 422],
    ["https://fine.example/phish/page", 422],
    [`http://${DOMAIN_A}/abcdefg`, 422],
  ];
  for (const [url, status] of refused) {
    const res = await world.request("POST", "/v1/links", { key: ownKey, body: { url } });
    assert.equal(res.status, status, `${url}: ${res.body}`);
    assert.equal(res.json.field, "url");
  }
  assert.equal(await linkCount(), before);
  const fine = await world.request("POST", "/v1/links", {
    key: ownKey,
    body: { url: "https://notevil.test/" },
  });
  assert.equal(fine.status, 201);
});

test("US-16 the verification step is pluggable: a remote-style verifier decides, before the link is stored", async () => {
  const pluggable = await apiWorld({}, { verifier: remoteVerifier });
  try {
    const k = await pluggable.workspace("w");
    const bad = await pluggable.request("POST", "/v1/links", {
      key: k,
      body: { url: "https://www.phishy.test/" },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.json.code, "LINK_TARGET_BLOCKED");
    assert.equal(bad.json.reason, "reported as phishing");
    assert.equal(
      (await pluggable.request("POST", "/v1/links", { key: k, body: { url: "https://ok.example/" } })).status,
      201,
    );
    assert.deepEqual(checked, ["https://www.phishy.test/", "https://ok.example/"]);
  } finally {
    await pluggable.close();
  }
});

test("US-16 creation is rate-limited per API key: past the burst a 429 with retryAfterS; another key is not affected", async () => {
  const before = await linkCount();
  const answers: number[] = [];
  for (let i = 0; i < 7; i++) {
    answers.push(
      (await world.request("POST", "/v1/links", { key, body: { url: `https://example.com/${i}` } })).status,
    );
  }
  assert.deepEqual(answers, [201, 201, 201, 201, 201, 429, 429]);
  const limited = await world.request("POST", "/v1/links", { key, body: { url: "https://example.com/x" } });
  assert.equal(limited.json.code, "LINK_CREATE_RATE_LIMITED");
  assert.ok(limited.json.retryAfterS >= 1);
  assert.equal(await linkCount(), before + 5);
  const otherKey = await world.workspace("other");
  assert.equal(
    (await world.request("POST", "/v1/links", { key: otherKey, body: { url: "https://example.com/o" } }))
      .status,
    201,
  );
});

test("US-16 an admin disables a link without deleting it: 410 while disabled, kept, and it redirects again once enabled", async () => {
  const k = await world.workspace("victim");
  const made = await world.request("POST", "/v1/links", {
    key: k,
    body: { url: "https://example.com/reported" },
  });
  const { code } = made.json;
  assert.equal((await world.request("GET", `/${code}`)).status, 302);
  const path = `/v1/admin/links/${DOMAIN_A}/${code}`;
  assert.equal(
    (await world.request("POST", `${path}/disable`, { key: ADMIN_TOKEN, body: { reason: "phishing" } }))
      .status,
    200,
  );
  assert.equal((await world.request("GET", `/${code}`)).status, 410);
  const view = await world.request("GET", `/v1/links/${DOMAIN_A}/${code}`, { key: k });
  assert.equal(view.json.disabled, true);
  assert.equal(view.json.disabledReason, "phishing");
  assert.equal(
    (await world.request("POST", `${path}/disable`, { key: k })).status,
    401,
    "a workspace key is not the admin token",
  );
  assert.equal((await world.request("POST", `${path}/enable`, { key: ADMIN_TOKEN })).status, 200);
  assert.equal((await world.request("GET", `/${code}`)).status, 302);
});
