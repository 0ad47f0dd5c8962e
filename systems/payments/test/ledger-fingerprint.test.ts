/**
 * The transfer fingerprint written directly (`transferFingerprintText`, `sortedEntries`) is the
 * very text the generic canonical JSON made before (issue 14's CPU work): every fingerprint
 * already stored must still match its retry. The reference below is the first definition, kept
 * here verbatim: entries sorted by the zero-padded `id + direction + currency` text, then amount,
 * and `canonicalJson` of the whole request object.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import {
  canonicalJson,
  type Entry,
  fingerprintOf,
  normalizeTransfer,
  sortedEntries,
  transferFingerprintText,
} from "../src/domain/ledger.ts";

function referenceSorted(entries: readonly Entry[]): Entry[] {
  const key = (e: Entry) => `${e.accountId.toString().padStart(20, "0")}${e.direction}${e.currency}`;
  return [...entries].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    if (ka !== kb) return ka < kb ? -1 : 1;
    return a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0;
  });
}

const entryArb: fc.Arbitrary<Entry> = fc.record({
  accountId: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }),
  currency: fc.constantFrom("USD", "EUR", "JPY", "BHD"),
  direction: fc.constantFrom("D" as const, "C" as const),
  amount: fc.bigInt({ min: 1n, max: 10n ** 15n }),
});
// Small id and amount ranges too, so ties on the account (and on everything) are common.
const tightEntryArb: fc.Arbitrary<Entry> = fc.record({
  accountId: fc.bigInt({ min: 1n, max: 12n }),
  currency: fc.constantFrom("USD", "EUR"),
  direction: fc.constantFrom("D" as const, "C" as const),
  amount: fc.bigInt({ min: 1n, max: 3n }),
});
const metadataArb = fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });

test("the fingerprint's entry order is the padded-text order it was defined by", () => {
  fc.assert(
    fc.property(fc.array(fc.oneof(entryArb, tightEntryArb), { maxLength: 8 }), (entries) => {
      assert.deepEqual(sortedEntries(entries), referenceSorted(entries));
    }),
    { numRuns: 500, seed: 20_261_203 },
  );
});

test("the fingerprint text written directly equals canonicalJson of the request object", () => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(entryArb, tightEntryArb), { minLength: 2, maxLength: 6 }),
      metadataArb,
      fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 31 * 24 * 3_600 }), { nil: null }),
      (entries, metadata, pending, timeoutS) => {
        const reference = canonicalJson({
          kind: "transfer",
          pending,
          entries: referenceSorted(entries),
          metadata,
          ...(timeoutS === null ? {} : { timeoutS }),
        });
        const direct = transferFingerprintText(
          sortedEntries(entries),
          canonicalJson(metadata),
          pending,
          timeoutS,
        );
        assert.equal(direct, reference);
      },
    ),
    { numRuns: 500, seed: 20_261_204 },
  );
});

test("normalizeTransfer's fingerprint is the sha256 of that reference text", () => {
  fc.assert(
    fc.property(
      fc.bigInt({ min: 1n, max: 2n ** 63n - 2n }),
      fc.bigInt({ min: 1n, max: 10n ** 15n }),
      metadataArb,
      fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 3_600 }), { nil: null }),
      (from, amount, metadata, pending, timeout) => {
        const timeoutS = pending ? timeout : null;
        const transfer = normalizeTransfer({
          idemKey: "k",
          from,
          to: from + 1n,
          amount,
          currency: "USD",
          pending,
          metadata,
          ...(timeoutS === null ? {} : { timeoutS }),
        });
        const entries: Entry[] = [
          { accountId: from, currency: "USD", direction: "D", amount },
          { accountId: from + 1n, currency: "USD", direction: "C", amount },
        ];
        const reference = fingerprintOf({
          kind: "transfer",
          pending,
          entries: referenceSorted(entries),
          metadata,
          ...(timeoutS === null ? {} : { timeoutS }),
        });
        assert.equal(transfer.fingerprint, reference);
      },
    ),
    { numRuns: 300, seed: 20_261_205 },
  );
});
