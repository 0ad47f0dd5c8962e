/**
 * One contract, two engines: the Lua scripts on real Redis and their in-process twins
 * answer the same calls the same way (the embedded default is an engine, not a mock).
 */
import assert from "node:assert/strict";
import { contractSuite } from "@casebook/lab/contract-suite";
import { type AlgorithmName, algorithmNames, type Limit } from "../src/domain/algorithm.ts";
import type { GroupCall } from "../src/domain/store-port.ts";
import { type StoreSubject, storeBackends } from "./store-backends.ts";

let sequence = 0;
const key = (name: string) => `{t${++sequence}}:${name}`;
const requestId = () => `req-${++sequence}`;

const fiveLimits: Record<AlgorithmName, Limit> = {
  "token-bucket": { algorithm: "token-bucket", capacity: 5, ratePerS: 0.001 },
  "fixed-window": { algorithm: "fixed-window", limit: 5, windowMs: 3_600_000 },
  "sliding-window-log": { algorithm: "sliding-window-log", limit: 5, windowMs: 3_600_000 },
  "sliding-window-counter": { algorithm: "sliding-window-counter", limit: 5, windowMs: 3_600_000 },
  "leaky-bucket": { algorithm: "leaky-bucket", queueCapacity: 5, ratePerS: 0.001 },
  gcra: { algorithm: "gcra", burst: 5, ratePerS: 0.001 },
};

function group(algorithm: AlgorithmName, keys: string[], limits: Limit[], cost = 1): GroupCall {
  return { algorithm, keys, limits, costs: keys.map(() => cost), requestId: requestId() };
}

async function spendOne(subject: StoreSubject, call: GroupCall) {
  const [outcome] = await subject.store.spend([{ ...call, requestId: requestId() }]);
  return outcome!;
}

contractSuite("LimiterStore", storeBackends, (it) => {
  it("RL-01 capacity 5 at 0.5/s: remaining 4,3,2,1,0, then refused with retry-after in (0, 2000] ms", async (s) => {
    const call = group(
      "token-bucket",
      [key("b")],
      [{ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }],
    );
    const remaining: number[] = [];
    for (let i = 0; i < 5; i++) {
      const outcome = await spendOne(s, call);
      assert.ok(outcome.allowed);
      remaining.push(outcome.keys[0]!.remaining);
    }
    assert.deepEqual(remaining, [4, 3, 2, 1, 0]);
    const sixth = await spendOne(s, call);
    assert.equal(sixth.allowed, false);
    assert.ok(sixth.retryAfterMs > 0 && sixth.retryAfterMs <= 2_000, `retryAfterMs ${sixth.retryAfterMs}`);
  });

  it("RL-02 refill is lazy: after the burst, one more call passes once 2 s of engine time have passed", async (s) => {
    const call = group(
      "token-bucket",
      [key("b")],
      [{ algorithm: "token-bucket", capacity: 5, ratePerS: 0.5 }],
    );
    for (let i = 0; i < 5; i++) assert.ok((await spendOne(s, call)).allowed);
    const refused = await spendOne(s, call);
    assert.equal(refused.allowed, false);
    await s.advance(refused.retryAfterMs + 5);
    assert.ok((await spendOne(s, call)).allowed, "a token came back by the retry-after");
    assert.equal((await spendOne(s, call)).allowed, false, "and only one");
  });

  for (const algorithm of algorithmNames) {
    it(`${algorithm}: a fresh key of 5 admits exactly 5 units, then refuses with a retry-after`, async (s) => {
      const call = group(algorithm, [key(algorithm)], [fiveLimits[algorithm]]);
      let allowed = 0;
      let lastRefusal = 0;
      for (let i = 0; i < 8; i++) {
        const outcome = await spendOne(s, call);
        if (outcome.allowed) allowed++;
        else lastRefusal = outcome.retryAfterMs;
      }
      assert.equal(allowed, 5);
      assert.ok(lastRefusal > 0);
    });

    it(`RL-10 ${algorithm}: user AND ip in one slot are all-or-nothing; a refusal spends neither`, async (s) => {
      const tag = `{u${++sequence}}`;
      const user = `${tag}:user`;
      const ip = `${tag}:ip`;
      const small = fiveLimits[algorithm];
      const one = { ...small, ...oneUnit(small) } as Limit;
      const both = group(algorithm, [user, ip], [small, one]);
      assert.ok((await spendOne(s, both)).allowed, "first passes both");
      const second = await spendOne(s, both);
      assert.equal(second.allowed, false, "ip has no unit left");
      assert.deepEqual(
        second.keys.map((k) => k.allowed),
        [true, false],
      );
      // user alone: 4 left, proving the refused call spent nothing on it
      const userOnly = group(algorithm, [user], [small]);
      let left = 0;
      while ((await spendOne(s, userOnly)).allowed) left++;
      assert.equal(left, 4);
    });

    it(`${algorithm}: refund gives back what a spend took`, async (s) => {
      const call = group(algorithm, [key("r")], [fiveLimits[algorithm]], 5);
      const [spent] = await s.store.spend([call]);
      assert.ok(spent!.allowed);
      assert.equal((await spendOne(s, { ...call, costs: [1] })).allowed, false);
      await s.store.refund([call]);
      assert.ok((await spendOne(s, { ...call, costs: [1] })).allowed);
    });
  }

  it("RL-04 60 decisions on one fresh bucket of 5 issued in one turn (batched together on Redis): exactly 5", async (s) => {
    const call = group("token-bucket", [key("burst")], [fiveLimits["token-bucket"]]);
    const outcomes = await Promise.all(
      Array.from({ length: 60 }, () => s.store.spend([{ ...call, requestId: requestId() }])),
    );
    const allowed = outcomes.filter(([o]) => o!.allowed);
    assert.equal(allowed.length, 5);
    assert.deepEqual(allowed.map(([o]) => o!.keys[0]!.remaining).sort(), [0, 1, 2, 3, 4]);
    assert.ok(outcomes.filter(([o]) => !o!.allowed).every(([o]) => o!.retryAfterMs > 0));
  });

  it("concurrent decisions on many keys and algorithms each get their own answer", async (s) => {
    const calls = algorithmNames.flatMap((algorithm) =>
      Array.from({ length: 10 }, (_, i) =>
        group(algorithm, [key(`${algorithm}-${i}`)], [fiveLimits[algorithm]], 1 + (i % 5)),
      ),
    );
    const outcomes = await Promise.all(calls.map((call) => s.store.spend([call])));
    outcomes.forEach(([outcome], i) => {
      assert.ok(outcome!.allowed, `call ${i}`);
      assert.equal(outcome!.keys[0]!.remaining, 5 - calls[i]!.costs[0]!, `call ${i}`);
    });
  });

  it("several groups go in one spend and come back in order", async (s) => {
    const a = group("token-bucket", [key("a")], [fiveLimits["token-bucket"]]);
    const b = group("fixed-window", [key("b")], [{ algorithm: "fixed-window", limit: 1, windowMs: 60_000 }]);
    const first = await s.store.spend([a, b]);
    assert.deepEqual(
      first.map((o) => o.allowed),
      [true, true],
    );
    const second = await s.store.spend([a, { ...b, requestId: requestId() }]);
    assert.deepEqual(
      second.map((o) => o.allowed),
      [true, false],
    );
  });

  it("a malformed call is an engine error, not a decision", async (s) => {
    const bad = group("token-bucket", [key("x")], [{ algorithm: "token-bucket", capacity: 5, ratePerS: 1 }]);
    await assert.rejects(s.store.spend([{ ...bad, costs: [] }]));
  });
});

function oneUnit(limit: Limit): Partial<Limit> {
  switch (limit.algorithm) {
    case "token-bucket":
      return { capacity: 1 };
    case "leaky-bucket":
      return { queueCapacity: 1 };
    case "gcra":
      return { burst: 1 };
    default:
      return { limit: 1 };
  }
}
