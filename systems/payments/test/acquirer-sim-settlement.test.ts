import assert from "node:assert/strict";
import { test } from "node:test";
import { parseSettlementCsv, SETTLEMENT_COLUMNS } from "../src/sim/settlement-file.ts";
import { authorization, DAY_MS, type SimFixture, START_MS, startSim, TODAY } from "./acquirer-sim-fixture.ts";

/** Today: three captures (one partly refunded), one void, one declined; tomorrow: one more capture. */
async function tradeADay({ call, clock }: SimFixture) {
  const ids: string[] = [];
  for (const [i, amount] of ["1000", "2000", "3000"].entries()) {
    const { body } = await call(
      "POST",
      "/v1/authorizations",
      authorization({ idempotencyKey: `day-${i}`, amountMinor: amount }),
    );
    await call("POST", `/v1/authorizations/${body.id}/capture`, {});
    ids.push(String(body.id));
    clock.advance(60_000);
  }
  await call("POST", `/v1/authorizations/${ids[1]}/refunds`, {
    idempotencyKey: "day-refund",
    amountMinor: "500",
  });
  const { body: voided } = await call(
    "POST",
    "/v1/authorizations",
    authorization({ idempotencyKey: "day-void" }),
  );
  await call("POST", `/v1/authorizations/${voided.id}/void`);
  await call(
    "POST",
    "/v1/authorizations",
    authorization({ idempotencyKey: "day-declined", cardToken: "tok_decline_x" }),
  );
  clock.advance(DAY_MS); // tomorrow: D+1
  const { body: late } = await call(
    "POST",
    "/v1/authorizations",
    authorization({ idempotencyKey: "next-day" }),
  );
  await call("POST", `/v1/authorizations/${late.id}/capture`, {});
  return ids;
}

test("the settlement file of a day exists only once the day is over (409 with readyAt)", async (t) => {
  const { call } = await startSim(t);
  const early = await call("GET", `/v1/settlements/${TODAY}.csv`);
  assert.equal(early.status, 409);
  assert.equal(early.body.code, "ACQUIRER_SETTLEMENT_NOT_READY");
  assert.equal(early.body.readyAt, "2026-10-23T00:00:00.000Z");
  const bad = await call("GET", "/v1/settlements/2026-02-30.csv");
  assert.equal(bad.status, 400);
  assert.equal((bad.body.errors as { field: string }[])[0]?.field, "/params/date");
});

test("supports PY-10: the D+1 file lists the day's captures and refunds, with fees, and nothing else", async (t) => {
  const fixture = await startSim(t);
  const ids = await tradeADay(fixture);
  const res = await fetch(`${fixture.url}/v1/settlements/${TODAY}.csv`);
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/csv/);
  const text = await res.text();
  assert.equal(text.split("\n")[0], SETTLEMENT_COLUMNS.join(","));
  const rows = parseSettlementCsv(text);
  assert.deepEqual(
    rows.map((r) => [
      r.idempotencyKey,
      r.authorizationId,
      r.operation,
      String(r.amountMinor),
      r.currency,
      String(r.feeMinor),
    ]),
    [
      ["day-0", ids[0], "capture", "1000", "BRL", "15"],
      ["day-1", ids[1], "capture", "2000", "BRL", "30"],
      ["day-2", ids[2], "capture", "3000", "BRL", "45"],
      ["day-refund", ids[1], "refund", "500", "BRL", "0"],
    ],
  );
  assert.equal(rows[0]!.settledAtMs, START_MS);
  const injected = await fixture.call("GET", `/admin/settlements/${TODAY}/differences`);
  assert.deepEqual(injected.body.differences, []);
});

test("supports PY-10: injected differences change the published file exactly as listed", async (t) => {
  const fixture = await startSim(t);
  await tradeADay(fixture);
  const { call, url } = fixture;
  const truth = parseSettlementCsv(await (await fetch(`${url}/v1/settlements/${TODAY}.csv`)).text());
  const put = await call("PUT", `/admin/settlements/${TODAY}/differences`, {
    dropRows: 1,
    changeAmounts: 1,
    unknownRows: 2,
  });
  assert.equal(put.status, 200);
  const listed = (await call("GET", `/admin/settlements/${TODAY}/differences`)).body.differences as {
    kind: string;
    idempotencyKey: string;
    operation: string;
    amountMinor: string;
    originalAmountMinor?: string;
  }[];
  assert.deepEqual(listed, put.body.differences);
  assert.deepEqual(listed.map((d) => d.kind).sort(), ["amount-changed", "dropped", "unknown", "unknown"]);
  const published = parseSettlementCsv(await (await fetch(`${url}/v1/settlements/${TODAY}.csv`)).text());
  const keyOf = (r: { operation: string; idempotencyKey: string }) => `${r.operation}:${r.idempotencyKey}`;
  const truthByKey = new Map(truth.map((r) => [keyOf(r), r]));
  const publishedByKey = new Map(published.map((r) => [keyOf(r), r]));
  // What a reconciliation must find, computed from the two files alone, equals what was injected.
  const found = [
    ...truth.filter((r) => !publishedByKey.has(keyOf(r))).map((r) => `dropped ${keyOf(r)}`),
    ...published
      .filter((r) => truthByKey.has(keyOf(r)) && truthByKey.get(keyOf(r))!.amountMinor !== r.amountMinor)
      .map((r) => `amount-changed ${keyOf(r)}`),
    ...published.filter((r) => !truthByKey.has(keyOf(r))).map((r) => `unknown ${keyOf(r)}`),
  ].sort();
  assert.deepEqual(found, listed.map((d) => `${d.kind} ${keyOf(d)}`).sort());
  const changed = listed.find((d) => d.kind === "amount-changed")!;
  assert.equal(truthByKey.get(keyOf(changed))!.amountMinor, BigInt(changed.originalAmountMinor!));
  const tooMany = await call("PUT", `/admin/settlements/${TODAY}/differences`, { dropRows: 5 });
  assert.equal(tooMany.status, 422);
  assert.equal(tooMany.body.code, "ACQUIRER_DIFFERENCES_TOO_MANY");
  assert.equal(tooMany.body.rows, 4);
  assert.equal(
    (await call("PUT", `/admin/settlements/2026-10-23/differences`, {})).status,
    409,
    "tomorrow is not over",
  );
  await call("POST", "/admin/reset");
  assert.deepEqual((await call("GET", `/admin/settlements/${TODAY}/differences`)).body.differences, []);
});
