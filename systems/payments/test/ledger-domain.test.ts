/** The ledger's pure rules: validation of a transfer, money as bigint, lock order, reversals, cursors. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  checkBalanced,
  type Entry,
  isCurrencyCode,
  legsByAccount,
  MAX_AMOUNT_MINOR,
  MAX_ENTRIES_PER_TRANSFER,
  normalizeTransfer,
  reversalEntries,
  type TransferRequest,
} from "../src/domain/ledger.ts";
import { decodeCursor, encodeCursor } from "../src/domain/ledger-cursor.ts";
import { ledgerErrors } from "../src/errors.ts";

function fieldOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    assert.ok(ledgerErrors.is(err, "LEDGER_TRANSFER_INVALID"), String(err));
    return err.fields.field;
  }
  assert.fail("expected LEDGER_TRANSFER_INVALID");
}

const simple: TransferRequest = { idemKey: "k1", from: 1n, to: 2n, amount: 500n, currency: "USD" };

test("every ledger error code has a 4xx/5xx status and a message", () => {
  for (const code of Object.keys(ledgerErrors.specs) as (keyof typeof ledgerErrors.specs)[]) {
    const error = ledgerErrors.create(code);
    assert.ok(code.startsWith("LEDGER_"));
    assert.ok(error.status >= 400 && error.status < 600);
    assert.ok(error.message.length > 10, code);
  }
});

test("PY-07 the from/to shorthand becomes a debit and a credit of the same bigint amount", () => {
  const transfer = normalizeTransfer(simple);
  assert.deepEqual(transfer.entries, [
    { accountId: 1n, currency: "USD", direction: "D", amount: 500n },
    { accountId: 2n, currency: "USD", direction: "C", amount: 500n },
  ]);
  assert.equal(transfer.pending, false);
  assert.deepEqual(transfer.metadata, {});
  assert.match(transfer.fingerprint, /^[0-9a-f]{64}$/);
});

test("PY-07 money is positive bigint minor units within bounds: floats, zero, negatives, overflow refused", () => {
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, amount: 5.5 as unknown as bigint })),
    "amount",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, amount: 500 as unknown as bigint })),
    "amount",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, amount: 0n })),
    "amount",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, amount: -1n })),
    "amount",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, amount: MAX_AMOUNT_MINOR + 1n })),
    "amount",
  );
  assert.equal(
    normalizeTransfer({ ...simple, amount: MAX_AMOUNT_MINOR }).entries[0]!.amount,
    MAX_AMOUNT_MINOR,
  );
});

test("currency codes are active ISO 4217 codes with a minor unit (not XYZ, not XAU)", () => {
  assert.ok(isCurrencyCode("USD") && isCurrencyCode("BRL") && isCurrencyCode("JPY") && isCurrencyCode("BHD"));
  for (const bad of ["usd", "US", "USDT", "U1D", "", 840, "XYZ", "XAU"])
    assert.ok(!isCurrencyCode(bad), String(bad));
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, currency: "XYZ" })),
    "currency",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, currency: "usd" })),
    "currency",
  );
});

test("PY-07 a transfer needs at least 2 and at most MAX_ENTRIES_PER_TRANSFER entries, distinct from/to", () => {
  const leg: Entry = { accountId: 1n, currency: "USD", direction: "D", amount: 1n };
  assert.equal(
    fieldOf(() => normalizeTransfer({ idemKey: "k", entries: [leg] })),
    "entries",
  );
  const many = Array.from(
    { length: MAX_ENTRIES_PER_TRANSFER + 2 },
    (_, i): Entry => ({
      ...leg,
      direction: i % 2 === 0 ? "D" : "C",
    }),
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ idemKey: "k", entries: many })),
    "entries",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, to: 1n })),
    "to",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, entries: [leg, leg] })),
    "entries",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ idemKey: "k", entries: [leg, { ...leg, direction: "X" as "D" }] })),
    "entries[1].direction",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, from: 0n })),
    "from",
  );
});

test("idempotency keys are 1..255 characters; metadata is a bounded JSON object", () => {
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, idemKey: "" })),
    "idemKey",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, idemKey: "x".repeat(256) })),
    "idemKey",
  );
  assert.equal(normalizeTransfer({ ...simple, idemKey: "x".repeat(255) }).idemKey.length, 255);
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, metadata: [] as unknown as Record<string, unknown> })),
    "metadata",
  );
  assert.equal(
    fieldOf(() => normalizeTransfer({ ...simple, metadata: { blob: "x".repeat(5_000) } })),
    "metadata",
  );
});

test("PY-07 PY-16 debits must equal credits per currency: a USD leg cannot balance a BRL leg", () => {
  const entries: Entry[] = [
    { accountId: 1n, currency: "USD", direction: "D", amount: 5_000n },
    { accountId: 2n, currency: "USD", direction: "C", amount: 4_900n },
    { accountId: 3n, currency: "BRL", direction: "C", amount: 100n },
  ];
  try {
    checkBalanced(entries);
    assert.fail("expected LEDGER_UNBALANCED");
  } catch (err) {
    assert.ok(ledgerErrors.is(err, "LEDGER_UNBALANCED"));
    assert.deepEqual(err.fields, { currency: "BRL", differenceMinor: "-100" });
  }
  assert.throws(
    () => normalizeTransfer({ idemKey: "k", entries: entries.slice(0, 2) }),
    /exceed credits by 100/,
  );
});

test("the fingerprint ignores entry order and metadata key order, and sees every parameter", () => {
  const a = normalizeTransfer({ ...simple, metadata: { x: 1, y: { b: 2, a: 1 } } });
  const b = normalizeTransfer({
    idemKey: "k1",
    entries: [...a.entries].reverse(),
    metadata: { y: { a: 1, b: 2 }, x: 1 },
  });
  assert.equal(a.fingerprint, b.fingerprint);
  assert.notEqual(
    normalizeTransfer({ ...simple, amount: 501n }).fingerprint,
    normalizeTransfer(simple).fingerprint,
  );
  assert.notEqual(
    normalizeTransfer({ ...simple, pending: true }).fingerprint,
    normalizeTransfer(simple).fingerprint,
  );
  assert.notEqual(
    normalizeTransfer({ ...simple, to: 3n }).fingerprint,
    normalizeTransfer(simple).fingerprint,
  );
});

test("PY-09 legs are summed per account and come out in ascending account id: the lock order", () => {
  const legs = legsByAccount([
    { accountId: 9n, currency: "USD", direction: "C", amount: 5n },
    { accountId: 2n, currency: "USD", direction: "D", amount: 3n },
    { accountId: 9n, currency: "USD", direction: "D", amount: 1n },
    { accountId: 10n, currency: "USD", direction: "D", amount: 1n },
  ]);
  assert.deepEqual(
    legs.map((l) => [l.accountId, l.debits, l.credits]),
    [
      [2n, 3n, 0n],
      [9n, 1n, 5n],
      [10n, 1n, 0n],
    ],
  );
  assert.throws(
    () =>
      legsByAccount([
        { accountId: 1n, currency: "USD", direction: "D", amount: 1n },
        { accountId: 1n, currency: "BRL", direction: "C", amount: 1n },
      ]),
    (err) => ledgerErrors.is(err, "LEDGER_CURRENCY_MISMATCH"),
  );
});

test("PY-15 a reversal swaps debit and credit; partial only for two entries and never beyond what is left", () => {
  const original: Entry[] = [
    { accountId: 1n, currency: "USD", direction: "D", amount: 100n },
    { accountId: 2n, currency: "USD", direction: "C", amount: 100n },
  ];
  assert.deepEqual(
    reversalEntries(original, 100n).map((e) => [e.accountId, e.direction, e.amount]),
    [
      [1n, "C", 100n],
      [2n, "D", 100n],
    ],
  );
  assert.deepEqual(
    reversalEntries(original, 100n, 30n).map((e) => e.amount),
    [30n, 30n],
  );
  assert.deepEqual(
    reversalEntries(original, 70n).map((e) => e.amount),
    [70n, 70n],
    "default: what is left",
  );
  const refused = (fn: () => unknown) =>
    assert.throws(fn, (err) => ledgerErrors.is(err, "LEDGER_REVERSAL_INVALID"));
  refused(() => reversalEntries(original, 70n, 71n));
  refused(() => reversalEntries(original, 0n));
  const split: Entry[] = [
    { accountId: 1n, currency: "USD", direction: "D", amount: 100n },
    { accountId: 2n, currency: "USD", direction: "C", amount: 90n },
    { accountId: 3n, currency: "USD", direction: "C", amount: 10n },
  ];
  refused(() => reversalEntries(split, 100n, 50n));
  assert.equal(reversalEntries(split, 100n).length, 3);
});

test("cursors round-trip and refuse anything we did not make", () => {
  assert.equal(decodeCursor(encodeCursor(1234n)), 1234n);
  for (const bad of ["", "abc", encodeCursor(0n), Buffer.from("v1:-1").toString("base64url")]) {
    assert.throws(
      () => decodeCursor(bad),
      (err) => ledgerErrors.is(err, "LEDGER_CURSOR_INVALID"),
      bad,
    );
  }
});
