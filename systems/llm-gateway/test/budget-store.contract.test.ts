/**
 * The token counter's contract, one suite on both engines: Redis (the scripts) and the
 * in-process twins. Windows of an hour, so no window turns inside a case (the window
 * arithmetic itself is `token-window.test.ts`, on a manual clock). Keys are unique per case.
 */
import assert from "node:assert/strict";
import { systemClock } from "@casebook/kit/clock";
import { type Backend, contractSuite } from "@casebook/lab/contract-suite";
import { requireRedis, uniqueName } from "@casebook/lab/test-engines";
import {
  type BudgetStore,
  openInProcessBudgetStore,
  openRedisBudgetStore,
} from "../src/store/budget-store.ts";

const windowMs = 3_600_000;

const backends: Backend<BudgetStore>[] = [
  {
    name: "in-process",
    embedded: true,
    open: async () => {
      const store = await openInProcessBudgetStore({ clock: systemClock });
      return { subject: store, close: () => store.close() };
    },
  },
  {
    name: "redis",
    open: async (t) => {
      const url = await requireRedis(t);
      if (url === undefined) return undefined;
      const store = await openRedisBudgetStore({ url });
      return { subject: store, close: () => store.close() };
    },
  },
];

contractSuite("budget store", backends, (it) => {
  it("LG-06 2,000 in + 4,000 max out reserves 6,000; 700 generated settles 2,700 and gives 3,300 back", async (store) => {
    const key = uniqueName("llm-test:tpm");
    const line = { key, limit: 9_000, cost: 6_000 };
    const first = await store.reserve([line], { windowMs });
    assert.equal(first.allowed, true);
    // 3,000 left: a second 6,000 does not fit until the refund.
    assert.equal((await store.reserve([line], { windowMs })).allowed, false);
    await store.settle(first, [{ key, limit: 9_000, delta: 2_700 - 6_000 }], { windowMs });
    // 2,700 used: 6,300 free now, so 6,000 fits again.
    assert.equal((await store.reserve([line], { windowMs })).allowed, true);
  });

  it("LG-05 requests and tokens are both limits: either one refuses, and a refusal writes neither", async (store) => {
    const rpm = uniqueName("llm-test:rpm");
    const tpm = uniqueName("llm-test:tpm");
    const lines = (cost: number) => [
      { key: rpm, limit: 2, cost: 1 },
      { key: tpm, limit: 10_000, cost },
    ];
    assert.equal((await store.reserve(lines(9_000), { windowMs })).allowed, true);
    const byTokens = await store.reserve(lines(2_000), { windowMs });
    assert.equal(byTokens.allowed, false);
    assert.equal(byTokens.refused?.key, tpm);
    assert.equal((await store.reserve(lines(1_000), { windowMs })).allowed, true);
    const byRequests = await store.reserve(lines(1), { windowMs });
    assert.equal(byRequests.refused?.key, rpm);
  });

  it("LG-06 a refusal carries the wait until the window ends; a cost above the limit never fits (-1)", async (store) => {
    const key = uniqueName("llm-test:tpm");
    await store.reserve([{ key, limit: 100, cost: 100 }], { windowMs });
    const refused = await store.reserve([{ key, limit: 100, cost: 1 }], { windowMs });
    assert.equal(refused.allowed, false);
    assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= windowMs, String(refused.retryAfterMs));
    const never = await store.reserve([{ key: uniqueName("llm-test:tpm"), limit: 100, cost: 101 }], {
      windowMs,
    });
    assert.equal(never.retryAfterMs, -1);
  });

  it("LG-06 usage above the reservation is charged as debt: the window is over its limit until it turns", async (store) => {
    const key = uniqueName("llm-test:tpm");
    const r = await store.reserve([{ key, limit: 1_000, cost: 500 }], { windowMs });
    await store.settle(r, [{ key, limit: 1_000, delta: 900 }], { windowMs }); // used 1,400
    const next = await store.reserve([{ key, limit: 1_000, cost: 1 }], { windowMs });
    assert.equal(next.allowed, false);
    // 400 of debt: the next window starts at 400, so 1 fits there; the wait ends at this window's end.
    assert.ok(next.retryAfterMs <= windowMs);
  });

  it("LG-07 50 concurrent reservations on one limit admit exactly what fits", async (store) => {
    const key = uniqueName("llm-test:tpm");
    const results = await Promise.all(
      Array.from({ length: 50 }, () => store.reserve([{ key, limit: 1_000, cost: 100 }], { windowMs })),
    );
    assert.equal(results.filter((r) => r.allowed).length, 10);
  });
});
