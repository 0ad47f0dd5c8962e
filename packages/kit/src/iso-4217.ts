/**
 * ISO 4217 as data: the active currency codes and their minor-unit exponent (how many decimal
 * places the minor unit is: USD 2 → 1250 is 12.50, JPY 0 → 1250 is ¥1250, BHD 3 → 1250 is 1.250).
 * A system that keeps amounts as integers of minor units (payments' `amountMinor`) takes only
 * the codes that have one; the exponent is what turns such an amount into a major amount.
 *
 * Source: ISO 4217 "List One: Currency, fund and precious metal codes", published by SIX Group,
 * the standard's maintenance agency (https://www.six-group.com/en/products-services/financial-information/data-standards.html,
 * file `list-one.xml`), column "Minor unit"; the snapshot of 1 January 2025 (amendment 178),
 * with ZWG (2024) and XCG (2025). A code whose minor unit is "N.A." — gold XAU, silver XAG,
 * platinum XPT, palladium XPD, the SDR XDR, the bond-market units XBA–XBD, SUCRE XSU, the ADB
 * unit XUA, the testing code XTS and "no currency" XXX — is no payment currency and is refused
 * by `currencyProblem`. Fund codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW) are listed because
 * List One lists them. Withdrawn codes (List Three) are unknown here.
 *
 * @example
 * minorUnitExponent("JPY"); // 0
 * minorUnitExponent("BHD"); // 3
 * currencyProblem("XYZ");   // "is not an ISO 4217 currency code (List One)"
 * currencyProblem("XAU");   // "XAU has no minor unit in ISO 4217 (metals, SDR, test codes): amounts in minor units are impossible"
 */

/** Active ISO 4217 codes → minor-unit exponent (decimal places), from List One. */
// biome-ignore format: a table, ten codes a line, in List One's alphabetical order
export const ISO_4217_MINOR_UNITS: Readonly<Record<string, number>> = Object.freeze({
  AED: 2, AFN: 2, ALL: 2, AMD: 2, ANG: 2, AOA: 2, ARS: 2, AUD: 2, AWG: 2, AZN: 2,
  BAM: 2, BBD: 2, BDT: 2, BGN: 2, BHD: 3, BIF: 0, BMD: 2, BND: 2, BOB: 2, BOV: 2,
  BRL: 2, BSD: 2, BTN: 2, BWP: 2, BYN: 2, BZD: 2, CAD: 2, CDF: 2, CHE: 2, CHF: 2,
  CHW: 2, CLF: 4, CLP: 0, CNY: 2, COP: 2, COU: 2, CRC: 2, CUC: 2, CUP: 2, CVE: 2,
  CZK: 2, DJF: 0, DKK: 2, DOP: 2, DZD: 2, EGP: 2, ERN: 2, ETB: 2, EUR: 2, FJD: 2,
  FKP: 2, GBP: 2, GEL: 2, GHS: 2, GIP: 2, GMD: 2, GNF: 0, GTQ: 2, GYD: 2, HKD: 2,
  HNL: 2, HTG: 2, HUF: 2, IDR: 2, ILS: 2, INR: 2, IQD: 3, IRR: 2, ISK: 0, JMD: 2,
  JOD: 3, JPY: 0, KES: 2, KGS: 2, KHR: 2, KMF: 0, KPW: 2, KRW: 0, KWD: 3, KYD: 2,
  KZT: 2, LAK: 2, LBP: 2, LKR: 2, LRD: 2, LSL: 2, LYD: 3, MAD: 2, MDL: 2, MGA: 2,
  MKD: 2, MMK: 2, MNT: 2, MOP: 2, MRU: 2, MUR: 2, MVR: 2, MWK: 2, MXN: 2, MXV: 2,
  MYR: 2, MZN: 2, NAD: 2, NGN: 2, NIO: 2, NOK: 2, NPR: 2, NZD: 2, OMR: 3, PAB: 2,
  PEN: 2, PGK: 2, PHP: 2, PKR: 2, PLN: 2, PYG: 0, QAR: 2, RON: 2, RSD: 2, RUB: 2,
  RWF: 0, SAR: 2, SBD: 2, SCR: 2, SDG: 2, SEK: 2, SGD: 2, SHP: 2, SLE: 2, SLL: 2,
  SOS: 2, SRD: 2, SSP: 2, STN: 2, SVC: 2, SYP: 2, SZL: 2, THB: 2, TJS: 2, TMT: 2,
  TND: 3, TOP: 2, TRY: 2, TTD: 2, TWD: 2, TZS: 2, UAH: 2, UGX: 0, USD: 2, USN: 2,
  UYI: 0, UYU: 2, UYW: 4, UZS: 2, VED: 2, VES: 2, VND: 0, VUV: 0, WST: 2, XAF: 0,
  XCD: 2, XCG: 2, XOF: 0, XPF: 0, YER: 2, ZAR: 2, ZMW: 2, ZWG: 2,
});

/** List One's codes whose minor unit is "N.A.": units of account, metals, test codes. */
// biome-ignore format: a table
export const ISO_4217_NO_MINOR_UNIT: readonly string[] = Object.freeze([
  "XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX",
]);

const NO_MINOR_UNIT = new Set(ISO_4217_NO_MINOR_UNIT);

/** The minor-unit exponent of an active currency; undefined for anything else (XYZ, XAU, "usd"). */
export function minorUnitExponent(code: string): number | undefined {
  return Object.hasOwn(ISO_4217_MINOR_UNITS, code) ? ISO_4217_MINOR_UNITS[code] : undefined;
}

/** True for an active ISO 4217 code with a minor unit. */
export function hasMinorUnit(code: unknown): code is string {
  return typeof code === "string" && minorUnitExponent(code) !== undefined;
}

/** Why `code` is no active currency with a minor unit (a field error's message), or undefined when it is one. */
export function currencyProblem(code: unknown): string | undefined {
  if (hasMinorUnit(code)) return undefined;
  if (typeof code === "string" && NO_MINOR_UNIT.has(code)) {
    return `${code} has no minor unit in ISO 4217 (metals, SDR, test codes): amounts in minor units are impossible`;
  }
  if (typeof code !== "string" || !/^[A-Z]{3}$/.test(code)) {
    return "must be an ISO 4217 code: three capital letters (USD, JPY, BHD)";
  }
  return "is not an ISO 4217 currency code (List One)";
}
