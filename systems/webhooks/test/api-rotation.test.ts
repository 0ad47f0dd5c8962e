/**
 * Secret rotation through HTTP, end to end on PGlite and PostgreSQL (WH-02 "client secret
 * rotation", WH-13): POST /v1/subscriptions/{id}/rotate-secret returns a new `whsec_`
 * secret once; a delivery sent during the overlap — secrets read the way the worker reads
 * them (loadForSend), sent by the real HttpSender to the demo receiver on 127.0.0.1 —
 * carries one signature per live secret, so the `standardwebhooks` reference library
 * verifies it with the old secret AND with the new one; after the overlap only the new one
 * verifies. Also: the bound on live secrets, a secret of the tenant's choosing, overlap 0.
 */
import assert from "node:assert/strict";
import { after, before } from "node:test";
import { contractSuite } from "@casebook/lab/contract-suite";
import { Webhook } from "standardwebhooks";
import { HttpSender } from "../src/clients/http-sender.ts";
import { MAX_LIVE_SECRETS } from "../src/domain/secret-rotation.ts";
import { createUrlPolicy } from "../src/domain/url-policy.ts";
import { loadForSend } from "../src/store/send-check.ts";
import { type ReceivedWebhook, startDemoReceiver } from "../src/tools/demo-receiver.ts";
import { type ApiWorld, apiBackends, assertProblem } from "./api-fixture.ts";
import { claim, HOUR_MS } from "./store-fixture.ts";

const policy = { allowHttp: true, allow: ["127.0.0.1/32"] };
/** Bound on waiting for the receiver: a local POST takes milliseconds. */
const RECEIVE_TIMEOUT_MS = 5_000;
let sender: HttpSender;

before(() => {
  // System clock for signing: the reference library checks the timestamp against real time.
  sender = new HttpSender({
    policy: createUrlPolicy(policy),
    timeouts: { connectMs: 2_000, headersMs: 5_000 },
  });
});
after(() => sender.close());

/**
 * Starts a demo receiver accepting any of `receiverSecrets`, points the subscription at it
 * (`pointAt`), posts an event, fans it out, claims and sends it the way the worker does;
 * returns the request as the receiver got it, and how many secrets signed it.
 */
async function deliverOne(
  s: ApiWorld,
  tenant: { id: string; key: string },
  receiverSecrets: string[],
  pointAt: (url: string) => Promise<void>,
): Promise<ReceivedWebhook & { liveSecrets: number }> {
  const receiver = await startDemoReceiver({ secrets: receiverSecrets, port: 0, log: () => {} });
  try {
    await pointAt(`${receiver.url}/hooks`);
    await s.request("POST", "/v1/events", {
      key: tenant.key,
      body: { type: "invoice.paid", payload: { at: s.clock.nowMs() } },
    });
    await s.fanOut();
    const [lease] = await claim(s, tenant.id);
    assert.ok(lease, "one delivery to claim");
    const plan = await loadForSend(s.db, lease, s.clock.nowMs());
    if (!plan.send) assert.fail(`the re-check refused: ${plan.reason}`);
    const body = JSON.stringify({
      type: plan.eventType,
      timestamp: new Date().toISOString(),
      data: plan.payload,
    });
    const secrets = plan.secrets.map((v) => v.secret);
    const res = await sender.send({ url: plan.url, messageId: plan.eventId, body, secrets });
    assert.equal(res.status, 204, "the demo receiver verified it");
    const got = await receiver.waitFor((w) => w.id === plan.eventId, RECEIVE_TIMEOUT_MS);
    return { ...got, liveSecrets: secrets.length };
  } finally {
    await receiver.close();
  }
}

function verifies(secret: string, hook: ReceivedWebhook): boolean {
  try {
    new Webhook(secret).verify(hook.body, hook.headers as Record<string, string>);
    return true;
  } catch {
    return false;
  }
}

/** A tenant and a subscription (its URL is replaced by each delivery's own receiver). */
async function subscribe(s: ApiWorld, receiverUrl = "http://127.0.0.1:1/hooks") {
  const tenant = await s.tenant();
  const created = await s.request("POST", "/v1/subscriptions", {
    key: tenant.key,
    body: { url: receiverUrl },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  assert.match(created.body.secret, /^whsec_/);
  return { tenant, id: created.body.id as string, secret: created.body.secret as string };
}

contractSuite("API secret rotation", apiBackends("wh_api_rotation", { urlPolicy: policy }), (it) => {
  it("WH-02 WH-13 rotation returns a new secret once; during the overlap both secrets verify, after it only the new", async (s) => {
    const { tenant, id, secret: oldSecret } = await subscribe(s);
    const rotated = await s.request("POST", `/v1/subscriptions/${id}/rotate-secret`, {
      key: tenant.key,
      body: { overlapMs: HOUR_MS },
    });
    assert.equal(rotated.status, 200);
    const newSecret = rotated.body.secret as string;
    assert.match(newSecret, /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/);
    assert.notEqual(newSecret, oldSecret);
    assert.equal(rotated.body.version, 2);
    assert.equal(rotated.body.previousSecretsExpireAt, new Date(s.clock.nowMs() + HOUR_MS).toISOString());
    const view = await s.request("GET", `/v1/subscriptions/${id}`, { key: tenant.key });
    assert.equal(view.body.secretVersion, 2);
    assert.equal("secret" in view.body, false, "a secret is shown once, never by GET");
    const during = await deliverVia(s, tenant, id, [oldSecret, newSecret]);
    assert.equal(during.liveSecrets, 2);
    assert.equal(
      String(during.headers["webhook-signature"]).split(" ").length,
      2,
      "one signature per secret",
    );
    assert.ok(verifies(oldSecret, during), "a receiver still on the old secret verifies");
    assert.ok(verifies(newSecret, during), "a receiver already on the new secret verifies");
    s.clock.advance(HOUR_MS);
    const later = await deliverVia(s, tenant, id, [oldSecret, newSecret]);
    assert.equal(later.liveSecrets, 1);
    assert.equal(verifies(oldSecret, later), false, "the old secret retired with the overlap");
    assert.ok(verifies(newSecret, later));
  });

  it("WH-02 overlap 0 retires the old secret at once; a tenant may bring its own secret", async (s) => {
    const { tenant, id, secret: oldSecret } = await subscribe(s);
    const mine = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const rotated = await s.request("POST", `/v1/subscriptions/${id}/rotate-secret`, {
      key: tenant.key,
      body: { overlapMs: 0, secret: mine },
    });
    assert.equal(rotated.body.secret, mine);
    const hook = await deliverVia(s, tenant, id, [oldSecret, mine]);
    assert.equal(hook.liveSecrets, 1);
    assert.deepEqual([verifies(oldSecret, hook), verifies(mine, hook)], [false, true]);
  });

  it(`WH-02 at most ${MAX_LIVE_SECRETS} secrets sign at once: one more rotation inside the overlap is 409`, async (s) => {
    const { tenant, id } = await subscribe(s);
    for (let i = 1; i < MAX_LIVE_SECRETS; i++) {
      // Every other call as a client that always sends a JSON Content-Type, with no body: still "defaults".
      const headers: Record<string, string> = i % 2 === 0 ? { "content-type": "application/json" } : {};
      const ok = await s.request("POST", `/v1/subscriptions/${id}/rotate-secret`, {
        key: tenant.key,
        headers,
      });
      assert.equal(ok.status, 200, `rotation ${i}`);
    }
    const refused = assertProblem(
      await s.request("POST", `/v1/subscriptions/${id}/rotate-secret`, { key: tenant.key }),
      409,
      "WEBHOOK_SECRET_ROTATION_LIMIT",
    );
    assert.equal(refused.liveSecrets, MAX_LIVE_SECRETS);
    const view = await s.request("GET", `/v1/subscriptions/${id}`, { key: tenant.key });
    assert.equal(view.body.secretVersion, MAX_LIVE_SECRETS, "the refused rotation made no version");
    s.clock.advance(24 * HOUR_MS);
    const afterOverlap = await s.request("POST", `/v1/subscriptions/${id}/rotate-secret`, {
      key: tenant.key,
    });
    assert.equal(afterOverlap.status, 200, "once the old ones retire, rotation works again");
  });
});

/** Points the subscription at a fresh demo receiver, delivers one event to it, and returns it. */
async function deliverVia(
  s: ApiWorld,
  tenant: { id: string; key: string },
  subscriptionId: string,
  receiverSecrets: string[],
) {
  return deliverOne(s, tenant, receiverSecrets, async (url) => {
    const patched = await s.request("PATCH", `/v1/subscriptions/${subscriptionId}`, {
      key: tenant.key,
      body: { url },
    });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
  });
}
