/**
 * Tenants, API keys, subscriptions and secret rotation on both engines (WH-02 "authorization
 * per tenant" and "client secret rotation", WH-08).
 */
import assert from "node:assert/strict";
import type { Database } from "@casebook/infra/sql/sql";
import { contractSuite } from "@casebook/lab/contract-suite";
import { uniqueName } from "@casebook/lab/test-engines";
import { MAX_LIVE_SECRETS } from "../src/domain/secret-rotation.ts";
import { deliveryErrors } from "../src/errors.ts";
import {
  createSubscription,
  getSubscription,
  liveSecrets,
  type NewSubscription,
  rotateSubscriptionSecret,
  setSubscriptionActive,
} from "../src/store/subscription-repository.ts";
import {
  authenticateTenant,
  createTenant,
  getTenant,
  issueApiKey,
  revokeApiKey,
  setTenantWeight,
} from "../src/store/tenant-repository.ts";
import { storeBackends } from "./store-backends.ts";
import { HOUR_MS, newWorld, seedTenant, storeError } from "./store-fixture.ts";

contractSuite("webhook tenants and subscriptions", storeBackends("wh_tenants"), (it) => {
  it("WH-02 a tenant's key authenticates it; a wrong, revoked or expired key does not", async (db: Database) => {
    const w = newWorld(db);
    const { tenant, apiKey } = await createTenant(db, { name: "Acme", weight: 3 }, w.ctx());
    assert.equal(tenant.weight, 3);
    assert.equal(tenant.deliveryWindowS, 86_400, "24 h by default");
    assert.equal(await authenticateTenant(db, apiKey.key, w.clock.nowMs()), tenant.id);
    const stored = await db.query<{ key_hash: string }>(
      "SELECT key_hash FROM tenant_api_keys WHERE tenant_id = $1",
      [tenant.id],
    );
    assert.ok(!stored.rows.some((r) => r.key_hash.includes(apiKey.key)), "only the hash is stored");
    const wrong = `${apiKey.prefix}_${"A".repeat(43)}`;
    assert.equal(await authenticateTenant(db, wrong, w.clock.nowMs()), undefined);
    const second = await issueApiKey(db, tenant.id, { ...w.ctx(), expiresAtMs: w.clock.nowMs() + HOUR_MS });
    assert.equal(await authenticateTenant(db, second.key, w.clock.nowMs()), tenant.id);
    w.clock.advance(HOUR_MS);
    assert.equal(await authenticateTenant(db, second.key, w.clock.nowMs()), undefined, "expired");
    assert.ok(await revokeApiKey(db, tenant.id, apiKey.prefix, w.clock.nowMs()));
    assert.equal(await authenticateTenant(db, apiKey.key, w.clock.nowMs()), undefined, "revoked");
    assert.ok(!(await revokeApiKey(db, "someone-else", apiKey.prefix, w.clock.nowMs())));
  });

  it("tenant settings are validated; retention never shorter than the 24 h-max retry window", async (db: Database) => {
    const w = newWorld(db);
    const bad: [string, object][] = [
      ["name", { name: "" }],
      ["id", { name: "x", id: "has space" }],
      ["weight", { name: "x", weight: 0 }],
      ["deliveryWindowS", { name: "x", deliveryWindowS: 86_401 }],
      ["payloadRetentionS", { name: "x", deliveryWindowS: 3_600, payloadRetentionS: 60 }],
      ["attemptRetentionS", { name: "x", attemptRetentionS: 10 }],
    ];
    for (const [field, input] of bad) {
      await assert.rejects(
        createTenant(db, input as { name: string }, w.ctx()),
        storeError("WEBHOOK_TENANT_INVALID", field),
        field,
      );
    }
    const t = await seedTenant(w, { id: uniqueName("t") });
    await assert.rejects(
      createTenant(db, { id: t.id, name: "again" }, w.ctx()),
      storeError("WEBHOOK_TENANT_INVALID"),
    );
    assert.ok(await setTenantWeight(db, t.id, 7));
    assert.equal((await getTenant(db, t.id))?.weight, 7);
    await assert.rejects(issueApiKey(db, "nobody", w.ctx()), storeError("WEBHOOK_TENANT_NOT_FOUND"));
  });

  it("a subscription is created with secret v1 and validated input", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const { subscription, secret } = await createSubscription(
      db,
      t.id,
      {
        url: "https://hooks.example.com/x",
        eventTypes: ["invoice.*"],
        orderingKeyPath: "data.id",
        rateLimitPerS: 5,
      },
      w.ctx(),
    );
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    assert.equal(subscription.secretVersion, 1);
    assert.equal(subscription.orderingKeyPath, "data.id");
    assert.deepEqual(subscription.eventTypes, ["invoice.*"]);
    assert.deepEqual(await liveSecrets(db, subscription.id, w.clock.nowMs()), [{ version: 1, secret }]);
    for (const [field, input] of [
      ["url", { url: "ftp://x.example.com" }],
      ["url", { url: "https://user:pw@x.example.com/" }],
      ["url", { url: "not a url" }],
      ["rateLimitPerS", { url: "https://x.example.com", rateLimitPerS: 0 }],
      ["maxConcurrency", { url: "https://x.example.com", maxConcurrency: 101 }],
      ["secret", { url: "https://x.example.com", secret: "plain" }],
      ["eventTypes", { url: "https://x.example.com", eventTypes: [] }],
    ] as [string, NewSubscription][]) {
      await assert.rejects(
        createSubscription(db, t.id, input, w.ctx()),
        storeError("WEBHOOK_SUBSCRIPTION_INVALID", field),
        `${field}: ${JSON.stringify(input)}`,
      );
    }
    await assert.rejects(
      createSubscription(db, "no-such-tenant", { url: "https://x.example.com" }, w.ctx()),
      storeError("WEBHOOK_TENANT_NOT_FOUND"),
    );
  });

  it("WH-02 secret rotation: both secrets sign during the overlap, only the new one after it", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const { subscription, secret: first } = await createSubscription(
      db,
      t.id,
      { url: "https://a.example.com" },
      w.ctx(),
    );
    const rotated = await rotateSubscriptionSecret(db, t.id, subscription.id, {
      ...w.ctx(),
      overlapMs: HOUR_MS,
    });
    assert.equal(rotated.version, 2);
    assert.deepEqual(await liveSecrets(db, subscription.id, w.clock.nowMs()), [
      { version: 2, secret: rotated.secret },
      { version: 1, secret: first },
    ]);
    w.clock.advance(HOUR_MS);
    assert.deepEqual(await liveSecrets(db, subscription.id, w.clock.nowMs()), [
      { version: 2, secret: rotated.secret },
    ]);
    assert.equal((await getSubscription(db, t.id, subscription.id))?.secretVersion, 2);
    const other = await seedTenant(w);
    await assert.rejects(
      rotateSubscriptionSecret(db, other.id, subscription.id, { ...w.ctx(), overlapMs: 0 }),
      storeError("WEBHOOK_SUBSCRIPTION_NOT_FOUND"),
      "another tenant cannot rotate it",
    );
  });

  it(`WH-02 racing rotations never pass the bound: at most ${MAX_LIVE_SECRETS} secrets sign at once`, async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const { subscription } = await createSubscription(db, t.id, { url: "https://a.example.com" }, w.ctx());
    const rotations = await Promise.allSettled(
      Array.from({ length: 8 }, () =>
        rotateSubscriptionSecret(db, t.id, subscription.id, { ...w.ctx(), overlapMs: HOUR_MS }),
      ),
    );
    const refused = rotations.filter((r) => r.status === "rejected");
    for (const r of refused)
      assert.ok(deliveryErrors.is(r.reason, "WEBHOOK_SECRET_ROTATION_LIMIT"), String(r.reason));
    assert.equal(rotations.length - refused.length, MAX_LIVE_SECRETS - 1, "the first secret is live too");
    assert.equal((await liveSecrets(db, subscription.id, w.clock.nowMs())).length, MAX_LIVE_SECRETS);
    assert.equal(
      (await getSubscription(db, t.id, subscription.id))?.secretVersion,
      MAX_LIVE_SECRETS,
      "a refused rotation leaves no version behind",
    );
  });

  it("disabling needs a reason; enabling clears it", async (db: Database) => {
    const w = newWorld(db);
    const t = await seedTenant(w);
    const { subscription } = await createSubscription(db, t.id, { url: "https://a.example.com" }, w.ctx());
    await assert.rejects(
      setSubscriptionActive(db, t.id, subscription.id, { active: false, nowMs: w.clock.nowMs() }),
      storeError("WEBHOOK_SUBSCRIPTION_INVALID"),
    );
    const off = await setSubscriptionActive(db, t.id, subscription.id, {
      active: false,
      reason: "410 Gone",
      nowMs: w.clock.nowMs(),
    });
    assert.deepEqual([off?.active, off?.disabledReason], [false, "410 Gone"]);
    const on = await setSubscriptionActive(db, t.id, subscription.id, {
      active: true,
      nowMs: w.clock.nowMs(),
    });
    assert.deepEqual([on?.active, on?.disabledReason], [true, null]);
  });
});
