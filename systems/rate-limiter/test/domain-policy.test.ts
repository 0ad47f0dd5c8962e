import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ManualClock } from "@casebook/kit/clock";
import { crc16Xmodem, hashTag as hashTagOf, keySlot } from "@casebook/kit/cluster-slot";
import { seededRandom } from "@casebook/kit/random";
import fc from "fast-check";
import { type Descriptor, descriptor, encodeKeyValue, parseKeyTemplate } from "../src/domain/descriptors.ts";
import { LocalLimiter } from "../src/domain/local-limiter.ts";
import {
  bucketEquivalent,
  type PolicyConfig,
  parsePolicyConfig,
  quotaOf,
  resolveLimits,
  skippedPolicies,
  unknownPolicyNames,
  validatePolicyConfig,
} from "../src/domain/policy.ts";
import { randomPicker } from "../src/domain/sub-buckets.ts";
import { rateLimitErrors } from "../src/errors.ts";

const tb = (capacity: number, ratePerS: number) => ({ algorithm: "token-bucket", capacity, ratePerS });

describe("slot", () => {
  test("CRC16/XMODEM matches the Redis Cluster spec's check value 0x31C3 for '123456789'", () => {
    assert.equal(crc16Xmodem(new TextEncoder().encode("123456789")), 0x31c3);
  });

  test("key slots match Redis CLUSTER KEYSLOT for known keys", () => {
    assert.equal(keySlot("foo"), 12182);
    assert.equal(keySlot("bar"), 5061);
    assert.equal(keySlot("hello"), 866);
  });

  test("the hash tag is the text between the first { and the next }, when non-empty", () => {
    assert.equal(hashTagOf("{user1000}.following"), "user1000");
    assert.equal(hashTagOf("foo{}{bar}"), "foo{}{bar}");
    assert.equal(hashTagOf("foo{{bar}}zap"), "{bar");
    assert.equal(hashTagOf("foo{bar}{zap}"), "bar");
    assert.equal(keySlot("{user1000}.following"), keySlot("{user1000}.followers"));
  });
});

describe("config validation", () => {
  test("a valid config parses with defaults: domain rl, failMode open, cost 1, one bucket", () => {
    const config = parsePolicyConfig({ policies: [{ name: "per-ip", key: "ip:{ip}", limit: tb(100, 50) }] });
    assert.equal(config.domain, "rl");
    const [policy] = config.policies;
    assert.equal(policy?.failMode, "open");
    assert.equal(policy?.shadow, false);
    assert.equal(policy?.cost.default, 1);
    assert.equal(policy?.subBuckets, 1);
  });

  test("every problem is collected, each named by its path, in ONE error", () => {
    const raw = {
      policies: [
        { name: "ok", key: "ip:{ip}", limit: tb(0, 1) },
        { name: "Bad Name", key: "user:{usr}", limit: { algorithm: "fixed-window", limit: 10 } },
        {
          name: "x",
          key: "ip:{ip}",
          failMode: "maybe",
          shadowMode: true,
          match: { usr: "*", route: "" },
          cost: 0,
          limit: { algorithm: "magic" },
        },
        { name: "ok", key: "user:{user}", hashTag: "{route}", subBuckets: 4, limit: tb(100, 1) },
        {
          name: "pricey",
          key: "user:{user}",
          cost: { default: 1, routes: { "/bulk": 500 } },
          limit: tb(100, 1),
        },
      ],
    };
    const result = validatePolicyConfig(raw);
    assert.equal(result.ok, false);
    const issues = result.ok ? [] : result.issues;
    const expected = [
      "policies[0].limit.capacity: must be an integer in [1,",
      "policies[1].name: must match",
      "policies[1].key: {usr} is not a descriptor key",
      "policies[1].limit.windowMs: must be an integer",
      "policies[2].failMode: must be",
      "policies[2].shadowMode: unknown field",
      "policies[2].limit.algorithm: must be one of",
      "policies[2].match.usr: not a descriptor key",
      "policies[2].match.route: must not be empty",
      "policies[2].cost: must be an integer in [1, 1000000]",
      'policies[3].name: "ok" is already used',
      "policies[3].hashTag: uses {route} which the key does not",
      "policies[3].subBuckets: cannot be combined with hashTag",
      "policies[4].cost: 500 exceeds the quota of one bucket (100)",
    ];
    for (const prefix of expected) {
      assert.ok(
        issues.some((i) => i.startsWith(prefix)),
        `missing issue ${prefix}\n${issues.join("\n")}`,
      );
    }
    assert.throws(
      () => parsePolicyConfig(raw),
      (error: unknown) => {
        assert.ok(rateLimitErrors.is(error, "RATELIMIT_POLICY_INVALID"));
        assert.deepEqual(error.fields.issues, issues);
        assert.match(error.message, /policies\[0\]\.limit\.capacity/);
        return true;
      },
    );
  });

  test("sub-buckets need a quota of at least one per bucket, and a cost that fits one bucket", () => {
    const result = validatePolicyConfig({
      policies: [
        { name: "a", key: "user:{user}", subBuckets: 8, limit: tb(4, 1) },
        { name: "b", key: "user:{user}", subBuckets: 4, cost: 30, limit: tb(100, 1) },
      ],
    });
    assert.equal(result.ok, false);
    const issues = result.ok ? [] : result.issues;
    assert.ok(
      issues.some((i) => i.startsWith("policies[0].subBuckets: 8 sub-buckets need a quota of at least 8")),
    );
    assert.ok(issues.some((i) => i.startsWith("policies[1].cost: 30 exceeds the quota of one bucket (25)")));
  });

  test("root-level problems and non-object input are reported too", () => {
    assert.deepEqual(validatePolicyConfig(null), {
      ok: false,
      issues: ["(root): must be an object with `policies`"],
    });
    const result = validatePolicyConfig({
      domain: "Has Space",
      maxValueChars: 3,
      defaults: { failMode: "x" },
      extra: 1,
    });
    const issues = result.ok ? [] : result.issues;
    for (const prefix of [
      "(root).extra: unknown field",
      "domain: must match",
      "(root).maxValueChars:",
      "defaults.failMode:",
      "policies: must be a list",
    ]) {
      assert.ok(
        issues.some((i) => i.startsWith(prefix)),
        prefix,
      );
    }
  });

  test("limits are checked against the algorithm module's bounds, cross-field rules included", () => {
    const result = validatePolicyConfig({
      policies: [
        { name: "slow", key: "ip:{ip}", limit: tb(1_000_000, 0.000_01) },
        {
          name: "log",
          key: "ip:{ip}",
          limit: { algorithm: "sliding-window-log", limit: 20_000, windowMs: 1_000 },
        },
        { name: "shaper", key: "ip:{ip}", limit: { algorithm: "leaky-bucket", capacity: 5, ratePerS: 1 } },
        { name: "thin", key: "ip:{ip}", subBuckets: 64, limit: tb(64, 0.000_01) },
      ],
    });
    const issues = result.ok ? [] : result.issues;
    for (const prefix of [
      "policies[0].limit: limit.ratePerS is too slow for capacity 1000000",
      "policies[1].limit.limit: must be an integer in [1, 10000]",
      "policies[2].limit.capacity: unknown field",
      "policies[2].limit.queueCapacity: must be an integer",
      "policies[3].subBuckets: one sub-bucket's limit is invalid: limit.ratePerS must be a number",
    ]) {
      assert.ok(
        issues.some((i) => i.startsWith(prefix)),
        `missing ${prefix}\n${issues.join("\n")}`,
      );
    }
  });

  test("envoy's requestsPerUnit + unit is a shorthand for a window limit", () => {
    const config = parsePolicyConfig({
      policies: [
        {
          name: "w",
          key: "ip:{ip}",
          limit: { algorithm: "fixed-window", requestsPerUnit: 100, unit: "minute" },
        },
      ],
    });
    assert.deepEqual(config.policies[0]?.limit, { algorithm: "fixed-window", limit: 100, windowMs: 60_000 });
  });

  test("quota and window per algorithm, and the equivalent token bucket", () => {
    assert.deepEqual(quotaOf({ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }), {
      quota: 5,
      windowS: 10,
    });
    assert.deepEqual(quotaOf({ algorithm: "sliding-window-log", limit: 10, windowMs: 1_500 }), {
      quota: 10,
      windowS: 2,
    });
    assert.deepEqual(quotaOf({ algorithm: "gcra", burst: 3, ratePerS: 100 }), { quota: 3, windowS: 1 });
    assert.deepEqual(bucketEquivalent({ algorithm: "fixed-window", limit: 60, windowMs: 60_000 }), {
      capacity: 60,
      ratePerS: 1,
    });
    assert.deepEqual(bucketEquivalent({ algorithm: "leaky-bucket", queueCapacity: 8, ratePerS: 2 }), {
      capacity: 8,
      ratePerS: 2,
    });
  });
});

describe("keys", () => {
  test("structural characters are escaped so a value cannot inject a hash tag or a key part", () => {
    assert.equal(encodeKeyValue("a:b{c}~%", { maxValueChars: 64 }), "a%3Ab%7Bc%7D%7E%25");
    assert.equal(encodeKeyValue("2001:db8::1", { maxValueChars: 64 }), "2001%3Adb8%3A%3A1");
    assert.equal(encodeKeyValue("/v1/pay", { maxValueChars: 64 }), "/v1/pay");
    const config = parsePolicyConfig({ policies: [{ name: "u", key: "user:{user}", limit: tb(5, 1) }] });
    const [limit] = resolveLimits(config, descriptor({ user: "x}{victim}" })).limits;
    assert.ok(limit && !limit.key.includes("{") && !limit.key.includes("}"));
    assert.equal(limit.slot, keySlot(limit.key));
    assert.notEqual(limit.slot, keySlot("victim"));
  });

  test("long values are bounded to maxValueChars and stay distinct (prefix + 64-bit hash)", () => {
    const a = encodeKeyValue(`${"x".repeat(300)}a`, { maxValueChars: 40 });
    const b = encodeKeyValue(`${"x".repeat(300)}b`, { maxValueChars: 40 });
    assert.ok(a.length <= 40 && b.length <= 40);
    assert.notEqual(a, b);
    assert.match(a, /^x+~[0-9a-f]{16}$/);
    // A cut inside an escape drops the partial escape instead of leaving "%4".
    const escaped = encodeKeyValue("::::::::::::::::::::", { maxValueChars: 24 });
    assert.match(escaped, /^(%3A)*~[0-9a-f]{16}$/);
  });

  test("API keys never appear in clear in a Redis key", () => {
    const config = parsePolicyConfig({ policies: [{ name: "plan", key: "key:{apiKey}", limit: tb(5, 1) }] });
    const [limit] = resolveLimits(config, descriptor({ apiKey: "sk_live_secret" })).limits;
    assert.ok(limit);
    assert.ok(!limit.key.includes("sk_live_secret"));
    assert.match(limit.key, /^rl:plan:tb:key:~[0-9a-f]{16}$/);
  });

  test("templates accept only known placeholders and safe literals", () => {
    assert.equal(parseKeyTemplate("user:{user}:route:{route}").ok, true);
    assert.equal(parseKeyTemplate("user {user}").ok, false);
    assert.equal(parseKeyTemplate("{nope}").ok, false);
    assert.equal(parseKeyTemplate("").ok, false);
  });
});

describe("resolution", () => {
  const config = parsePolicyConfig({
    domain: "api",
    policies: [
      { name: "per-ip", key: "ip:{ip}", limit: tb(100, 50) },
      { name: "per-user", key: "user:{user}", hashTag: "user:{user}", limit: tb(20, 2) },
      {
        name: "per-user-route",
        match: { route: "/v1/pay*", method: ["POST", "PUT"] },
        key: "user:{user}:route:{route}",
        hashTag: "user:{user}",
        failMode: "closed",
        cost: { default: 1, routes: { "/v1/payments/bulk": 5 } },
        limit: tb(10, 1),
      },
      {
        name: "per-user-daily",
        key: "user:{user}",
        hashTag: "user:{user}",
        limit: { algorithm: "fixed-window", limit: 1000, windowMs: 86_400_000 },
      },
      {
        name: "probe",
        key: "user:{user}",
        hashTag: "user:{user}",
        shadow: true,
        failMode: "closed",
        limit: tb(5, 1),
      },
    ],
  });
  const payment = descriptor({ ip: "203.0.113.9", user: "42", route: "/v1/payments/bulk", method: "POST" });

  test("applicable limits come in config order with concrete keys, costs and quotas", () => {
    const { limits } = resolveLimits(config, payment);
    assert.deepEqual(
      limits.map((l) => [l.policy, l.key, l.cost]),
      [
        ["per-ip", "api:per-ip:tb:ip:203.0.113.9", 1],
        ["per-user", "api:per-user:tb:{user:42}:user:42", 1],
        ["per-user-route", "api:per-user-route:tb:{user:42}:user:42:route:/v1/payments/bulk", 5],
        ["per-user-daily", "api:per-user-daily:fw:{user:42}:user:42", 1],
        ["probe", "api:probe:tb:{user:42}:user:42", 1],
      ],
    );
    assert.deepEqual(limits[3]?.quota, { quota: 1000, windowS: 86_400 });
  });

  test("match: exact, any-of, prefix and presence; a policy whose key needs an absent value does not apply", () => {
    const get = descriptor({ ip: "203.0.113.9", user: "42", route: "/v1/payments", method: "GET" });
    assert.deepEqual(
      resolveLimits(config, get).limits.map((l) => l.policy),
      ["per-ip", "per-user", "per-user-daily", "probe"],
    );
    const anonymous = descriptor({ ip: "203.0.113.9", route: "/v1/pay", method: "POST" });
    assert.deepEqual(
      resolveLimits(config, anonymous).limits.map((l) => l.policy),
      ["per-ip"],
    );
  });

  test("RL-10 limits sharing a hash tag land in one slot and one atomic group per algorithm; others get their own call", () => {
    const { groups } = resolveLimits(config, payment);
    const userSlot = keySlot("user:42");
    assert.deepEqual(
      groups.map((g) => [g.algorithm, g.shadow, g.slot === userSlot, g.limits.map((l) => l.policy)]),
      [
        ["token-bucket", false, false, ["per-ip"]],
        ["token-bucket", false, true, ["per-user", "per-user-route"]],
        ["fixed-window", false, true, ["per-user-daily"]],
        ["token-bucket", true, true, ["probe"]],
      ],
    );
    for (const group of groups)
      for (const limit of group.limits) assert.equal(keySlot(limit.key), group.slot);
  });

  test("shadow limits never share a call with enforcing ones, come last, and do not make a request fail-closed", () => {
    const { groups, failMode } = resolveLimits(config, payment);
    assert.equal(groups.at(-1)?.shadow, true);
    assert.equal(failMode, "closed");
    const get = descriptor({ ip: "203.0.113.9", user: "42", route: "/v1/feed", method: "GET" });
    assert.equal(resolveLimits(config, get).failMode, "open");
  });

  test("a group never holds more keys than one script call accepts (limitBounds.maxKeysPerCall)", () => {
    const many = parsePolicyConfig({
      policies: Array.from({ length: 20 }, (_, i) => ({
        name: `p${i}`,
        key: "user:{user}",
        hashTag: "user:{user}",
        limit: tb(10 + i, 1),
      })),
    });
    const { groups } = resolveLimits(many, descriptor({ user: "42" }));
    assert.deepEqual(
      groups.map((g) => g.limits.length),
      [16, 4],
    );
    assert.equal(groups[0]?.slot, groups[1]?.slot);
    assert.deepEqual(
      groups.flatMap((g) => g.limits.map((l) => l.index)),
      Array.from({ length: 20 }, (_, i) => i),
    );
  });

  test("resolution is deterministic: the same request gives the same plan", () => {
    assert.deepEqual(resolveLimits(config, payment), resolveLimits(config, payment));
  });

  test("a split policy gets a sub-bucket key, its share of the limit, and needs a picker", () => {
    const split = parsePolicyConfig({
      policies: [{ name: "hot", key: "user:{user}", subBuckets: 4, limit: tb(10, 4) }],
    });
    const d = descriptor({ user: "42" });
    assert.throws(() => resolveLimits(split, d), /pass a picker/);
    const [limit] = resolveLimits(split, d, { picker: { pick: () => 1 } }).limits;
    assert.equal(limit?.key, "rl:hot:tb:user:42:1");
    assert.deepEqual(limit?.limit, { algorithm: "token-bucket", capacity: 3, ratePerS: 1 });
    assert.deepEqual(limit?.subBucket, { index: 1, count: 4, baseKey: "rl:hot:tb:user:42" });
    assert.deepEqual(limit?.quota, { quota: 10, windowS: 3 });
    assert.throws(() => resolveLimits(split, d, { picker: { pick: () => 4 } }), RangeError);
    const picked = resolveLimits(split, d, { picker: randomPicker(seededRandom(3)) }).limits[0];
    assert.ok((picked?.subBucket?.index ?? 99) < 4);
  });
});

describe("layers", () => {
  // 000 §1.4: the bot dies on the per-IP layer, the partner over its plan on the API-key layer,
  // the logged-in user bursting on payments on the per-user-per-route rule.
  const config: PolicyConfig = parsePolicyConfig({
    policies: [
      { name: "ip-volume", key: "ip:{ip}", limit: tb(20, 0.001) },
      {
        name: "plan-free",
        match: { plan: "free" },
        key: "key:{apiKey}",
        limit: { algorithm: "fixed-window", limit: 5, windowMs: 60_000 },
      },
      {
        name: "plan-pro",
        match: { plan: "pro" },
        key: "key:{apiKey}",
        limit: { algorithm: "fixed-window", limit: 500, windowMs: 60_000 },
      },
      {
        name: "payments-per-user",
        match: { route: "/v1/payments*", method: "POST" },
        key: "user:{user}:route:{route}",
        failMode: "closed",
        limit: tb(3, 0.001),
      },
    ],
  });

  /** Spends every enforcing limit in order through the in-process limiter; refunds on refusal. */
  function decide(local: LocalLimiter, d: Descriptor): string | undefined {
    const spent: { key: string; bucket: { capacity: number; ratePerS: number }; cost: number }[] = [];
    for (const limit of resolveLimits(config, d).limits) {
      const bucket = bucketEquivalent(limit.limit);
      if (local.take(limit.key, bucket, limit.cost).allowed)
        spent.push({ key: limit.key, bucket, cost: limit.cost });
      else {
        for (const s of spent) local.refund(s.key, s.bucket, s.cost);
        return limit.policy;
      }
    }
    return undefined;
  }

  test("RL-16 per-IP volume, per-API-key plan quota and per-user-per-route rule all apply at once, each rejecting what it identifies", () => {
    const local = new LocalLimiter({ clock: new ManualClock(0), maxKeys: 1_000, fraction: 1 });
    const refusals = (requests: Descriptor[]) =>
      requests.map((d) => decide(local, d)).filter((r) => r !== undefined);

    const bot = Array.from({ length: 30 }, () =>
      descriptor({ ip: "198.51.100.7", route: "/v1/feed", method: "GET" }),
    );
    assert.deepEqual(new Set(refusals(bot)), new Set(["ip-volume"]));
    assert.equal(refusals(bot.slice(0, 1)).length, 1);

    const partner = Array.from({ length: 8 }, (_, i) =>
      descriptor({
        ip: `192.0.2.${i}`,
        apiKey: "partner-key",
        plan: "free",
        route: "/v1/feed",
        method: "GET",
      }),
    );
    const partnerRefusals = refusals(partner);
    assert.deepEqual(partnerRefusals, ["plan-free", "plan-free", "plan-free"]);

    const user = Array.from({ length: 5 }, (_, i) =>
      descriptor({
        ip: `10.0.0.${i}`,
        apiKey: "app-key",
        plan: "pro",
        user: "42",
        route: "/v1/payments",
        method: "POST",
      }),
    );
    assert.deepEqual(refusals(user), ["payments-per-user", "payments-per-user"]);
    // The same user reading is not touched by the payments rule.
    const reads = Array.from({ length: 5 }, (_, i) =>
      descriptor({
        ip: `10.0.1.${i}`,
        apiKey: "app-key",
        plan: "pro",
        user: "42",
        route: "/v1/feed",
        method: "GET",
      }),
    );
    assert.deepEqual(refusals(reads), []);
  });

  test("RL-16 a refusal by a later layer refunds the earlier layers it had spent", () => {
    const local = new LocalLimiter({ clock: new ManualClock(0), maxKeys: 1_000, fraction: 1 });
    const d = descriptor({ ip: "10.9.9.9", user: "7", route: "/v1/payments", method: "POST" });
    const outcomes = Array.from({ length: 6 }, () => decide(local, d));
    assert.deepEqual(outcomes, [
      undefined,
      undefined,
      undefined,
      "payments-per-user",
      "payments-per-user",
      "payments-per-user",
    ]);
    // 3 spent on ip-volume, the 3 refused requests refunded theirs: 17 of 20 left.
    const left = local.take("rl:ip-volume:tb:ip:10.9.9.9", { capacity: 20, ratePerS: 0.001 }, 1);
    assert.equal(left.remaining, 16);
  });
});

test("keySlot's ASCII fast path agrees with CRC16 over the UTF-8 bytes, for any key", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary", maxLength: 40 }), (key) => {
      const tag = hashTagOf(key);
      assert.equal(keySlot(key), crc16Xmodem(new TextEncoder().encode(tag)) % 16_384);
    }),
    { numRuns: 2_000, seed: 8 },
  );
});

test("skippedPolicies: a policy lacking only descriptors is skipped with what is missing; one whose match refuses is not", () => {
  const config = parsePolicyConfig({
    policies: [
      { name: "per-ip", key: "ip:{ip}", limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 1 } },
      {
        name: "free-users",
        match: { plan: "free" },
        key: "user:{user}",
        limit: { algorithm: "token-bucket", capacity: 5, ratePerS: 1 },
      },
    ],
  });
  assert.deepEqual(skippedPolicies(config, descriptor({ ip: "10.0.0.1" })), [
    { policy: "free-users", reason: "descriptor-missing", missing: ["plan", "user"] },
  ]);
  assert.deepEqual(skippedPolicies(config, descriptor({ plan: "free" })), [
    { policy: "per-ip", reason: "descriptor-missing", missing: ["ip"] },
    { policy: "free-users", reason: "descriptor-missing", missing: ["user"] },
  ]);
  // plan=pro: free-users does not apply by its match, missing user or not.
  assert.deepEqual(skippedPolicies(config, descriptor({ ip: "10.0.0.1", plan: "pro" })), []);
  assert.deepEqual(skippedPolicies(config, descriptor({ plan: "free" }), ["free-users"]), [
    { policy: "free-users", reason: "descriptor-missing", missing: ["user"] },
  ]);
  assert.deepEqual(unknownPolicyNames(config, ["per-ip", "per-ipp", "per-ipp", "x"]), ["per-ipp", "x"]);
});
