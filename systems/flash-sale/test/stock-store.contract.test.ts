/**
 * The stock scripts and their twins, one suite on both engines (in-process, real Redis):
 * FS-03 (the naive read-check-write oversells), FS-04 (the last one gets 0, the next −1 and
 * is undone), FS-05 (parallel attempts from several connections take exactly the stock),
 * and the hold bookkeeping the reconciler (FS-09) and the recompute (FS-11) rely on.
 */
import assert from "node:assert/strict";
import { redisErrors } from "@casebook/infra/redis/redis-errors";
import { contractSuite } from "@casebook/lab/contract-suite";
import type { ReserveReply } from "../src/domain/checkout.ts";
import { inProcessStock, redisStock, type StockHarness } from "./stock-backends.ts";

const LONG_MS = 600_000;
/** Long enough that the calls before the first look all fit inside it on a loaded machine. */
const DUE_TTL_MS = 1_000;

async function newSale(h: StockHarness, name: string, available: number): Promise<string> {
  const sale = h.sale(name);
  assert.equal(
    await h.stores[0]!.restore(sale, { epoch: 1, available, carried: [], recheckMs: LONG_MS }),
    true,
  );
  return sale;
}

function hold(holdId: string, quantity = 1, holdTtlMs = LONG_MS) {
  return { holdId, quantity, holdTtlMs };
}

/** The counter after a reservation that must have succeeded. */
function after(reply: ReserveReply): number {
  assert.equal(reply.kind, "reserved");
  return reply.kind === "reserved" ? reply.availableAfter : Number.NaN;
}

function replyCode(error: unknown): unknown {
  return redisErrors.is(error, "REDIS_SCRIPT_FAILED") ? error.fields.replyCode : error;
}

contractSuite<StockHarness>("stock scripts and twins", [inProcessStock, redisStock], (it) => {
  it("FS-04 with one ticket left the first reserve gets 0 and buys, the second gets -1, is refused and undone", async (h) => {
    const sale = await newSale(h, "last-one", 1);
    const first = await h.stores[0]!.reserve(sale, hold("a"));
    const second = await h.stores[1]!.reserve(sale, hold("b"));
    assert.deepEqual([first.kind, first.kind === "reserved" && first.availableAfter], ["reserved", 0]);
    assert.deepEqual(second, { kind: "refused", availableAfter: -1 });
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 0, epoch: 1, holds: 1 });
  });

  it("FS-05 400 parallel attempts on 5 connections for 60 tickets: exactly 60 succeed, the counter ends at 0", async (h) => {
    const sale = await newSale(h, "race", 60);
    const results = await Promise.all(
      Array.from({ length: 400 }, (_, i) => h.stores[i % h.stores.length]!.reserve(sale, hold(`h${i}`))),
    );
    const won = results.filter(
      (r): r is Extract<ReserveReply, { kind: "reserved" }> => r.kind === "reserved",
    );
    assert.equal(won.length, 60);
    assert.deepEqual(
      won.map((r) => r.availableAfter).sort((a, b) => a - b),
      Array.from({ length: 60 }, (_, i) => i),
      "each winner saw a distinct value after its subtraction",
    );
    assert.ok(results.every((r) => r.kind === "reserved" || (r.kind === "refused" && r.availableAfter < 0)));
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 0, epoch: 1, holds: 60 });
  });

  it("FS-05 batched across callers: 600 parallel attempts on 5 connections for two sales of 60 and 40 take exactly each stock, in fewer script calls", async (h) => {
    const sales = [await newSale(h, "batch-a", 60), await newSale(h, "batch-b", 40)];
    const results = await Promise.all(
      Array.from({ length: 600 }, (_, i) =>
        h.batched[i % h.batched.length]!.reserve(sales[i % 2]!, hold(`h${i}`)),
      ),
    );
    for (const [s, stock] of [
      [0, 60],
      [1, 40],
    ] as const) {
      const won = results.filter((r, i) => i % 2 === s && r.kind === "reserved");
      assert.equal(won.length, stock, `sale ${s}`);
      assert.deepEqual(
        won.map((r) => after(r)).sort((a, b) => a - b),
        Array.from({ length: stock }, (_, i) => i),
        "each winner saw a distinct value after its subtraction",
      );
      assert.deepEqual(await h.stores[0]!.view(sales[s]!), { available: 0, epoch: 1, holds: stock });
    }
    const calls = h.batched.reduce((n, b) => n + b.reserveBatchStats!.batches, 0);
    assert.ok(calls < 600, `600 reservations went out in ${calls} batches`);
  });

  it("a batch decides each caller on its own: a reused hold id fails only its caller, a bad quantity never joins, a missing sale is missing only for its callers", async (h) => {
    const sale = await newSale(h, "batch-codes", 3);
    const store = h.batched[0]!;
    const [a, again, b, lost, c] = await Promise.allSettled([
      store.reserve(sale, hold("a")),
      store.reserve(sale, hold("a")),
      store.reserve(sale, hold("b", 0)),
      store.reserve(h.sale("batch-missing"), hold("x")),
      store.reserve(sale, hold("c", 2)),
    ]);
    assert.equal(a.status === "fulfilled" && a.value.kind, "reserved");
    assert.ok(again.status === "rejected" && replyCode(again.reason) === "HOLD_EXISTS");
    assert.ok(b.status === "rejected" && replyCode(b.reason) === "ARG_INVALID");
    assert.deepEqual(lost.status === "fulfilled" && lost.value, { kind: "missing" });
    assert.equal(c.status === "fulfilled" && c.value.kind === "reserved" && c.value.availableAfter, 0);
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 0, epoch: 1, holds: 2 });
  });

  it("FS-03 the naive read-check-write sells one ticket several times under the same parallel load", async (h) => {
    const sale = await newSale(h, "naive", 1);
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => h.stores[i % h.stores.length]!.naiveReserve(sale, 1)),
    );
    const sold = results.filter((r) => r.reserved).length;
    assert.ok(sold > 1, `the naive flow sold ${sold} of 1 ticket`);
    assert.equal((await h.stores[0]!.view(sale)).available, 0, "and its counter says nothing was wrong");
  });

  it("a quantity above what is left is refused whole and undone; a smaller one still fits", async (h) => {
    const sale = await newSale(h, "quantity", 3);
    assert.equal(after(await h.stores[0]!.reserve(sale, hold("a", 2))), 1);
    assert.deepEqual(await h.stores[0]!.reserve(sale, hold("b", 2)), { kind: "refused", availableAfter: -1 });
    assert.equal(after(await h.stores[0]!.reserve(sale, hold("c", 1))), 0);
  });

  it("a sale with no stock in Redis is STOCK_MISSING, a reused hold id HOLD_EXISTS, a bad quantity ARG_INVALID", async (h) => {
    assert.deepEqual(await h.stores[0]!.reserve(h.sale("missing"), hold("a")), { kind: "missing" });
    const sale = await newSale(h, "codes", 5);
    await h.stores[0]!.reserve(sale, hold("a"));
    await assert.rejects(h.stores[0]!.reserve(sale, hold("a")), (e) => replyCode(e) === "HOLD_EXISTS");
    await assert.rejects(h.stores[0]!.reserve(sale, hold("b", 0)), (e) => replyCode(e) === "ARG_INVALID");
    await assert.rejects(h.stores[0]!.reserve(sale, hold("c", 1.5)), (e) => replyCode(e) === "ARG_INVALID");
    assert.equal((await h.stores[0]!.view(sale)).available, 4, "refused calls changed nothing");
  });

  it("a released hold's tickets come back once, however many callers return it", async (h) => {
    const sale = await newSale(h, "return", 4);
    await h.stores[0]!.reserve(sale, hold("a", 3));
    const returns = await Promise.all(h.stores.map((s) => s.returnHold(sale, "a")));
    assert.equal(returns.filter((r) => r.returned).length, 1);
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 4, epoch: 1, holds: 0 });
  });

  it("a settled (paid) hold leaves the set for good and returning it afterwards gives nothing back", async (h) => {
    const sale = await newSale(h, "settle", 2);
    await h.stores[0]!.reserve(sale, hold("a"));
    assert.equal(await h.stores[0]!.settleHold(sale, "a"), true);
    assert.equal(await h.stores[0]!.settleHold(sale, "a"), false);
    assert.equal((await h.stores[0]!.returnHold(sale, "a")).returned, false);
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 1, epoch: 1, holds: 0 });
  });

  it("FS-09 expired holds are found through the sorted set by the server's clock, oldest first; a deferred one waits", async (h) => {
    const sale = await newSale(h, "due", 5);
    await h.stores[0]!.reserve(sale, hold("first", 1, DUE_TTL_MS));
    await h.passMs(2);
    await h.stores[0]!.reserve(sale, hold("second", 1, DUE_TTL_MS));
    await h.stores[0]!.reserve(sale, hold("late", 1, LONG_MS));
    assert.deepEqual((await h.stores[0]!.dueHolds(sale, 10)).holdIds, []);
    await h.passMs(DUE_TTL_MS + 10);
    assert.deepEqual((await h.stores[0]!.dueHolds(sale, 10)).holdIds, ["first", "second"]);
    assert.deepEqual((await h.stores[0]!.dueHolds(sale, 1)).holdIds, ["first"], "maxBatch bounds a round");
    assert.equal(await h.stores[0]!.deferHold(sale, "first", LONG_MS), true);
    assert.equal(await h.stores[0]!.deferHold(sale, "gone", LONG_MS), false);
    assert.deepEqual((await h.stores[0]!.dueHolds(sale, 10)).holdIds, ["second"]);
    await assert.rejects(h.stores[0]!.dueHolds(sale, 0), (e) => replyCode(e) === "ARG_INVALID");
  });

  it("FS-11 a restore writes the recomputed stock and carried holds; an older epoch never overwrites a newer one", async (h) => {
    const sale = await newSale(h, "restore", 10);
    await h.stores[0]!.reserve(sale, hold("lost"));
    await h.forget(sale);
    assert.deepEqual(await h.stores[0]!.reserve(sale, hold("x")), { kind: "missing" });
    const carried = [{ holdId: "charging-1", quantity: 2 }];
    assert.equal(
      await h.stores[0]!.restore(sale, { epoch: 3, available: 7, carried, recheckMs: LONG_MS }),
      true,
    );
    assert.equal(
      await h.stores[1]!.restore(sale, { epoch: 2, available: 9, carried: [], recheckMs: LONG_MS }),
      false,
    );
    assert.deepEqual(await h.stores[0]!.view(sale), { available: 7, epoch: 3, holds: 1 });
    assert.deepEqual(await h.stores[0]!.returnHold(sale, "charging-1"), { returned: true, available: 9 });
    const y = await h.stores[0]!.reserve(sale, hold("y"));
    assert.equal(y.kind === "reserved" && y.epoch, 3);
  });
});
