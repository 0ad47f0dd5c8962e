import assert from "node:assert/strict";
import { test } from "node:test";
import {
  currencyProblem,
  hasMinorUnit,
  ISO_4217_MINOR_UNITS,
  ISO_4217_NO_MINOR_UNIT,
  minorUnitExponent,
} from "../src/iso-4217.ts";

test("minor-unit exponents from ISO 4217 List One: USD 2, JPY 0, BHD 3, CLF 4, HUF 2, IQD 3", () => {
  const expected = { USD: 2, EUR: 2, BRL: 2, JPY: 0, KRW: 0, BHD: 3, KWD: 3, CLF: 4, HUF: 2, IQD: 3 };
  for (const [code, exponent] of Object.entries(expected))
    assert.equal(minorUnitExponent(code), exponent, code);
});

test("XYZ, lowercase, a non-string and an inherited key are no currency; XAU and XTS have no minor unit", () => {
  for (const bad of ["XYZ", "usd", "US", "", "toString", "__proto__"]) {
    assert.equal(minorUnitExponent(bad), undefined, bad);
    assert.ok(!hasMinorUnit(bad), bad);
  }
  assert.ok(!hasMinorUnit(840));
  assert.equal(currencyProblem("XYZ"), "is not an ISO 4217 currency code (List One)");
  assert.match(currencyProblem("usd")!, /three capital letters/);
  assert.match(currencyProblem(undefined)!, /three capital letters/);
  for (const code of ISO_4217_NO_MINOR_UNIT) {
    assert.equal(minorUnitExponent(code), undefined, code);
    assert.match(currencyProblem(code)!, /has no minor unit/);
  }
  assert.equal(currencyProblem("JPY"), undefined);
});

test("the table is well formed: three capital letters, exponents 0..4, and every non-fund code known to ICU", () => {
  const funds = new Set(["BOV", "CHE", "CHW", "CLF", "COU", "MXV", "USN", "UYI", "UYW", "VED"]);
  const icu = new Set(Intl.supportedValuesOf("currency"));
  for (const [code, exponent] of Object.entries(ISO_4217_MINOR_UNITS)) {
    assert.match(code, /^[A-Z]{3}$/);
    assert.ok([0, 2, 3, 4].includes(exponent), `${code} ${exponent}`);
    if (!funds.has(code)) assert.ok(icu.has(code), `${code} is a code ICU knows (a typo would not be)`);
  }
  assert.ok(Object.keys(ISO_4217_MINOR_UNITS).length > 150);
});
