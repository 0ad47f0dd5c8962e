/**
 * WH-13 (and WH-02's secret rotation): Standard Webhooks signatures, checked against the
 * spec's test vector and the `standardwebhooks` reference library, plus the receiver's
 * side: timestamp tolerance, constant-time compare, replay protection.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { ReplayGuard } from "../src/domain/replay-guard.ts";
import {
  initialSecrets,
  MAX_LIVE_SECRETS,
  rotateSecret,
  signingSecrets,
} from "../src/domain/secret-rotation.ts";
import {
  generateSecret,
  MAX_SIGNATURES,
  secretKey,
  sign,
  signedHeaders,
  verifyWebhook,
} from "../src/domain/signature.ts";
import { deliveryErrors } from "../src/errors.ts";

const VECTOR = {
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
  timestampS: 1614265330,
  body: '{"test": 2432232314}',
  signature: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};

const invalidBecause = (reason: string) => (e: unknown) =>
  deliveryErrors.is(e, "WEBHOOK_SIGNATURE_INVALID") && e.fields.reason === reason;

test("WH-13 the spec's test vector signs to v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", (t) => {
  assert.equal(sign({ ...VECTOR, secrets: [VECTOR.secret] }), VECTOR.signature);
  const headers = signedHeaders({ ...VECTOR, secrets: [VECTOR.secret] });
  // The reference library reads Date.now(): pin it to the vector's time.
  t.mock.timers.enable({ apis: ["Date"], now: VECTOR.timestampS * 1_000 });
  assert.deepEqual(new Webhook(VECTOR.secret).verify(VECTOR.body, { ...headers }), { test: 2432232314 });
  assert.deepEqual(
    verifyWebhook({
      headers: { ...headers },
      body: VECTOR.body,
      secrets: [VECTOR.secret],
      nowS: VECTOR.timestampS,
    }),
    {
      id: VECTOR.id,
      timestampS: VECTOR.timestampS,
    },
  );
});

test("WH-13 our signature equals the reference library's for any secret, id, time and body", () => {
  fc.assert(
    fc.property(
      fc.uint8Array({ minLength: 24, maxLength: 64 }),
      fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
      fc.integer({ min: 0, max: 4_000_000_000 }),
      fc.string({ unit: "grapheme", maxLength: 300 }),
      (key, id, timestampS, body) => {
        const secret = `whsec_${Buffer.from(key).toString("base64")}`;
        const theirs = new Webhook(secret).sign(id, new Date(timestampS * 1_000), body);
        assert.equal(sign({ id, timestampS, body, secrets: [secret] }), theirs);
        const headers = {
          "webhook-id": id,
          "webhook-timestamp": String(timestampS),
          "webhook-signature": theirs,
        };
        assert.equal(verifyWebhook({ headers, body, secrets: [secret], nowS: timestampS }).id, id);
      },
    ),
    { numRuns: 200 },
  );
});

test("WH-13 the receiver refuses a changed body, another secret, missing headers and bad timestamps", () => {
  const secrets = [VECTOR.secret];
  const headers = { ...signedHeaders({ ...VECTOR, secrets }) };
  const nowS = VECTOR.timestampS;
  const verify = (h: Record<string, string>, body = VECTOR.body, at = nowS, s = secrets) =>
    verifyWebhook({ headers: h, body, secrets: s, nowS: at });
  assert.throws(() => verify(headers, '{"test": 2432232315}'), invalidBecause("no-matching-signature"));
  const other = generateSecret((n) => randomBytes(n));
  assert.throws(() => verify(headers, VECTOR.body, nowS, [other]), invalidBecause("no-matching-signature"));
  const { "webhook-id": _, ...noId } = headers;
  assert.throws(() => verify(noId), invalidBecause("missing-header"));
  assert.throws(
    () => verify({ ...headers, "webhook-timestamp": "16e8" }),
    invalidBecause("malformed-timestamp"),
  );
  // Five minutes either way verify; one second more does not (a captured request goes stale).
  assert.equal(verify(headers, VECTOR.body, nowS + 300).id, VECTOR.id);
  assert.equal(verify(headers, VECTOR.body, nowS - 300).id, VECTOR.id);
  assert.throws(() => verify(headers, VECTOR.body, nowS + 301), invalidBecause("timestamp-too-old"));
  assert.throws(() => verify(headers, VECTOR.body, nowS - 301), invalidBecause("timestamp-too-new"));
  // Header names are case-insensitive, as HTTP says.
  const shouting = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
  assert.equal(verify(shouting).id, VECTOR.id);
});

test("WH-13 a forged header with many signatures costs at most MAX_SIGNATURES comparisons", () => {
  const junk = Array.from({ length: 500 }, (_, i) => `v1,${Buffer.alloc(32, i).toString("base64")}`);
  const headers = { ...signedHeaders({ ...VECTOR, secrets: [VECTOR.secret] }) };
  const buried = { ...headers, "webhook-signature": [...junk, headers["webhook-signature"]].join(" ") };
  assert.throws(
    () =>
      verifyWebhook({
        headers: buried,
        body: VECTOR.body,
        secrets: [VECTOR.secret],
        nowS: VECTOR.timestampS,
      }),
    invalidBecause("no-matching-signature"),
  );
  const mixed = { ...headers, "webhook-signature": `v2,abc v1,short ${headers["webhook-signature"]}` };
  assert.ok(MAX_SIGNATURES >= 3);
  assert.equal(
    verifyWebhook({ headers: mixed, body: VECTOR.body, secrets: [VECTOR.secret], nowS: VECTOR.timestampS })
      .id,
    VECTOR.id,
  );
});

test("WH-13 replay protection: a verified id is accepted once inside the window", () => {
  const guard = new ReplayGuard({ toleranceS: 300, maxEntries: 3 });
  const { id } = verifyWebhook({
    headers: { ...signedHeaders({ ...VECTOR, secrets: [VECTOR.secret] }) },
    body: VECTOR.body,
    secrets: [VECTOR.secret],
    nowS: VECTOR.timestampS,
  });
  guard.accept(id, VECTOR.timestampS);
  assert.throws(
    () => guard.accept(id, VECTOR.timestampS + 299),
    (e) => deliveryErrors.is(e, "WEBHOOK_REPLAY_DETECTED"),
  );
  // Past 2 × tolerance the id is forgotten: by then its timestamp can no longer verify anyway.
  guard.accept("msg_b", VECTOR.timestampS + 300);
  guard.accept("msg_c", VECTOR.timestampS + 300);
  assert.throws(
    () => guard.accept("msg_d", VECTOR.timestampS + 300),
    (e) => deliveryErrors.is(e, "WEBHOOK_REPLAY_CACHE_FULL"),
    "full: refuse rather than forget and reopen replay",
  );
  guard.accept("msg_d", VECTOR.timestampS + 600);
  assert.equal(guard.size, 3);
});

test("WH-02 WH-13 rotation signs with old and new secrets during the overlap, then only the new", () => {
  const [oldSecret, newSecret] = ["a", "b"].map((c) => `whsec_${Buffer.alloc(32, c).toString("base64")}`) as [
    string,
    string,
  ];
  let versions = initialSecrets(oldSecret);
  const rotatedAtMs = VECTOR.timestampS * 1_000;
  versions = rotateSecret(versions, { secret: newSecret, nowMs: rotatedAtMs, overlapMs: 3_600_000 });
  const during = signingSecrets(versions, rotatedAtMs + 60_000);
  assert.deepEqual(during, [newSecret, oldSecret]);
  const headers = { ...signedHeaders({ ...VECTOR, secrets: during }) };
  assert.equal(headers["webhook-signature"].split(" ").length, 2);
  for (const receiverSecret of [oldSecret, newSecret]) {
    const nowS = VECTOR.timestampS;
    assert.equal(
      verifyWebhook({ headers, body: VECTOR.body, secrets: [receiverSecret], nowS }).id,
      VECTOR.id,
    );
  }
  assert.deepEqual(signingSecrets(versions, rotatedAtMs + 3_600_000), [newSecret]);
  assert.deepEqual(
    versions.map((v) => v.version),
    [2, 1],
  );
});

test("WH-02 rotation is bounded: at most MAX_LIVE_SECRETS secrets sign at once", () => {
  const secrets = Array.from(
    { length: MAX_LIVE_SECRETS + 1 },
    (_, i) => `whsec_${Buffer.alloc(24, i).toString("base64")}`,
  );
  let versions = initialSecrets(secrets[0]!);
  for (let i = 1; i < MAX_LIVE_SECRETS; i++)
    versions = rotateSecret(versions, { secret: secrets[i]!, nowMs: i, overlapMs: 1_000 });
  assert.throws(
    () => rotateSecret(versions, { secret: secrets[MAX_LIVE_SECRETS]!, nowMs: 10, overlapMs: 1_000 }),
    (e) => deliveryErrors.is(e, "WEBHOOK_SECRET_ROTATION_LIMIT") && e.fields.retiresAtMs === 1_001,
  );
  // Once the oldest retires, rotation works again and drops it.
  const later = rotateSecret(versions, {
    secret: secrets[MAX_LIVE_SECRETS]!,
    nowMs: 1_001,
    overlapMs: 1_000,
  });
  assert.equal(later.length, MAX_LIVE_SECRETS);
});

test("secrets are whsec_ + base64 of 24..64 bytes; generateSecret draws from the injected source", () => {
  assert.equal(secretKey(VECTOR.secret).length, 24);
  const secretInvalid = (e: unknown) => deliveryErrors.is(e, "WEBHOOK_SECRET_INVALID");
  for (const bad of [
    "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "whsec_",
    "whsec_!!!!",
    `whsec_${Buffer.alloc(16).toString("base64")}`,
  ]) {
    assert.throws(() => secretKey(bad), secretInvalid, bad);
  }
  const secret = generateSecret((n) => new Uint8Array(n).fill(7));
  assert.equal(secret, `whsec_${Buffer.alloc(32, 7).toString("base64")}`);
  assert.throws(() => generateSecret((n) => new Uint8Array(n), 8), RangeError);
});
