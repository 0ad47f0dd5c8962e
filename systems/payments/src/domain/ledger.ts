/**
 * Double-entry bookkeeping as pure rules (seed 000 §4, PY-07, PY-15, PY-16): what a valid
 * transfer is, before any database sees it. Money is `bigint` minor units (cents), never a
 * float; every transfer has at least two entries and, per currency, debits equal credits.
 * The database enforces the same invariants again (001_ledger.sql); this layer exists so a
 * caller gets a typed error naming the field instead of a constraint violation at COMMIT.
 *
 * Balance convention: credits − debits, so the money an account holds is positive. A
 * transfer of 500 from A to B debits A and credits B.
 *
 * @example
 * const transfer = normalizeTransfer({ idemKey: "pay-1", from: 1n, to: 2n, amount: 500n, currency: "USD" });
 * transfer.entries; // [{ accountId: 1n, currency: "USD", direction: "D", amount: 500n }, { … "C" … }]
 */
import { createHash } from "node:crypto";
import { hasMinorUnit } from "@casebook/kit/iso-4217";
import { ledgerErrors } from "../errors.ts";

export type Direction = "D" | "C";

export interface Entry {
  accountId: bigint;
  /** ISO 4217 code; must be the account's own currency. */
  currency: string;
  direction: Direction;
  /** Minor units, > 0 and ≤ MAX_AMOUNT_MINOR. */
  amount: bigint;
}

export type Metadata = Record<string, unknown>;

/** Either explicit `entries`, or the two-leg shorthand `from`/`to`/`amount`/`currency`. */
export interface TransferRequest {
  /** The caller's retry handle: the same key with the same parameters returns the same transaction. */
  idemKey: string;
  entries?: readonly Entry[];
  from?: bigint;
  to?: bigint;
  amount?: bigint;
  currency?: string;
  /** A two-phase hold (TigerBeetle's pending transfer): later posted or voided. */
  pending?: boolean;
  /**
   * Pending only: seconds after which the hold can no longer be posted and is voided by the
   * expirer (TigerBeetle's `timeout`), 1..MAX_TIMEOUT_S. Absent: the hold waits until posted or voided.
   */
  timeoutS?: number;
  metadata?: Metadata;
}

export interface Transfer {
  idemKey: string;
  entries: Entry[];
  pending: boolean;
  /** A pending transfer's timeout in seconds, or null (none). */
  timeoutS: number | null;
  metadata: Metadata;
  /** sha256 of the canonical request: what "same parameters" means for a replayed key. */
  fingerprint: string;
}

/** 10^15 minor units (10 trillion dollars): 9 000 such legs still fit an int8 balance. */
export const MAX_AMOUNT_MINOR = 10n ** 15n;
/** Legs in one transfer; a payment with fees and splits needs a handful, not hundreds. */
export const MAX_ENTRIES_PER_TRANSFER = 64;
export const MAX_IDEM_KEY_CHARS = 255;
/** Longest pending timeout: 31 days, a card authorization's longest life. */
export const MAX_TIMEOUT_S = 31 * 24 * 3_600;
/** Serialized metadata size; the ledger is not a document store. */
export const MAX_METADATA_BYTES = 4_096;

const MAX_ID = 2n ** 63n - 1n;

function invalid(field: string, reason: string): Error {
  return ledgerErrors.create("LEDGER_TRANSFER_INVALID", { fields: { field, reason } });
}

/** An active ISO 4217 code with a minor unit (`USD`, `BRL`, `JPY`; not `XYZ`, not `XAU`): `@casebook/kit/iso-4217`. */
export function isCurrencyCode(code: unknown): code is string {
  return hasMinorUnit(code);
}

/** The reason a ledger error gives for a currency it refuses. */
export const CURRENCY_REASON = "currency must be an active ISO 4217 code with a minor unit (USD, JPY, BHD)";

/** A positive bigint within bounds, or LEDGER_TRANSFER_INVALID naming `field`. */
export function checkAmount(amount: unknown, field: string): bigint {
  if (typeof amount !== "bigint") throw invalid(field, "amount must be a bigint of minor units");
  if (amount <= 0n) throw invalid(field, "amount must be positive");
  if (amount > MAX_AMOUNT_MINOR) throw invalid(field, `amount must be at most ${MAX_AMOUNT_MINOR}`);
  return amount;
}

/** An account or transaction id: a positive bigint (ids are int8 identities). */
export function checkId(id: unknown, field: string): bigint {
  if (typeof id !== "bigint" || id <= 0n || id > MAX_ID)
    throw invalid(field, "id must be a positive int8 bigint");
  return id;
}

export function checkIdemKey(key: unknown, field = "idemKey"): string {
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_IDEM_KEY_CHARS) {
    throw invalid(field, `idempotency key must be 1..${MAX_IDEM_KEY_CHARS} characters`);
  }
  return key;
}

function checkEntry(entry: Entry, index: number): Entry {
  const at = `entries[${index}]`;
  if (!isCurrencyCode(entry.currency)) throw invalid(`${at}.currency`, CURRENCY_REASON);
  if (entry.direction !== "D" && entry.direction !== "C") throw invalid(`${at}.direction`, "D or C");
  return {
    accountId: checkId(entry.accountId, `${at}.accountId`),
    currency: entry.currency,
    direction: entry.direction,
    amount: checkAmount(entry.amount, `${at}.amount`),
  };
}

/** Throws LEDGER_UNBALANCED for the first currency (alphabetically) whose debits ≠ credits. */
export function checkBalanced(entries: readonly Entry[]): void {
  for (const [currency, difference] of differencesByCurrency(entries)) {
    if (difference !== 0n) {
      throw ledgerErrors.create("LEDGER_UNBALANCED", {
        fields: { currency, differenceMinor: difference.toString() },
        detail: `Debits exceed credits by ${difference} minor units in ${currency}.`,
      });
    }
  }
}

/** Debits minus credits per currency, sorted by currency. */
export function differencesByCurrency(entries: readonly Entry[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const entry of entries) {
    const signed = entry.direction === "D" ? entry.amount : -entry.amount;
    sums.set(entry.currency, (sums.get(entry.currency) ?? 0n) + signed);
  }
  return new Map([...sums].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function shorthandEntries(request: TransferRequest): Entry[] {
  const from = checkId(request.from, "from");
  const to = checkId(request.to, "to");
  if (from === to) throw invalid("to", "from and to must be different accounts");
  const amount = checkAmount(request.amount, "amount");
  if (!isCurrencyCode(request.currency)) throw invalid("currency", CURRENCY_REASON);
  const currency = request.currency;
  return [
    { accountId: from, currency, direction: "D", amount },
    { accountId: to, currency, direction: "C", amount },
  ];
}

/** Valid metadata, with its canonical JSON (measured once: the size bound and the fingerprint both use it). */
function checkMetadata(metadata: unknown): { metadata: Metadata; json: string } {
  if (metadata === undefined) return { metadata: {}, json: "{}" };
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    throw invalid("metadata", "metadata must be a JSON object");
  }
  const json = canonicalJson(metadata);
  if (Buffer.byteLength(json) > MAX_METADATA_BYTES)
    throw invalid("metadata", `metadata must be at most ${MAX_METADATA_BYTES} bytes`);
  return { metadata: metadata as Metadata, json };
}

/**
 * Validates a transfer request and returns its normal form: explicit entries, bounds checked,
 * balanced per currency, with the fingerprint a replay is compared against.
 */
export function normalizeTransfer(request: TransferRequest): Transfer {
  const idemKey = checkIdemKey(request.idemKey);
  const hasShorthand = request.from !== undefined || request.to !== undefined || request.amount !== undefined;
  if (request.entries !== undefined && hasShorthand)
    throw invalid("entries", "give entries or from/to, not both");
  const raw = request.entries ?? shorthandEntries(request);
  if (!Array.isArray(raw)) throw invalid("entries", "entries must be an array");
  if (raw.length < 2) throw invalid("entries", "double entry needs at least 2 entries");
  if (raw.length > MAX_ENTRIES_PER_TRANSFER) {
    throw invalid("entries", `at most ${MAX_ENTRIES_PER_TRANSFER} entries per transfer`);
  }
  const entries = raw.map(checkEntry);
  checkBalanced(entries);
  const pending = request.pending === true;
  const timeoutS = checkTimeout(request.timeoutS, pending);
  const { metadata, json } = checkMetadata(request.metadata);
  const fingerprint = createHash("sha256")
    .update(transferFingerprintText(sortedEntries(entries), json, pending, timeoutS))
    .digest("hex");
  return { idemKey, entries, pending, timeoutS, metadata, fingerprint };
}

/**
 * What a transfer's fingerprint hashes: exactly `canonicalJson({ kind: "transfer", pending,
 * entries, metadata, timeoutS? })` — the text every stored fingerprint was made from — written
 * directly, since the generic walk (a replacer call per value, a sorted copy per object) was a
 * visible share of a transfer's CPU. The timeout joins only when given: fingerprints stored
 * before it stay valid. `entries` are checked ones (ids and amounts bigints, an ISO code, D or C)
 * in `sortedEntries` order; `metadataJson` is `canonicalJson(metadata)`.
 */
export function transferFingerprintText(
  entries: readonly Entry[],
  metadataJson: string,
  pending: boolean,
  timeoutS: number | null,
): string {
  let text = '{"entries":[';
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (i > 0) text += ",";
    text += `{"accountId":"${e.accountId}","amount":"${e.amount}","currency":${JSON.stringify(e.currency)},"direction":${JSON.stringify(e.direction)}}`;
  }
  text += `],"kind":"transfer","metadata":${metadataJson},"pending":${pending}`;
  return timeoutS === null ? `${text}}` : `${text},"timeoutS":${JSON.stringify(timeoutS)}}`;
}

function checkTimeout(timeoutS: unknown, pending: boolean): number | null {
  if (timeoutS === undefined) return null;
  if (!pending) throw invalid("timeoutS", "a timeout is for pending transfers only");
  if (!(Number.isInteger(timeoutS) && (timeoutS as number) >= 1 && (timeoutS as number) <= MAX_TIMEOUT_S))
    throw invalid("timeoutS", `timeoutS must be an integer number of seconds in 1..${MAX_TIMEOUT_S}`);
  return timeoutS as number;
}

/**
 * The fingerprint's entry order: by account id, then direction, then currency, then amount (the
 * order of the zero-padded `id + direction + currency` text it was first defined by, compared
 * field by field without building that text).
 */
export function sortedEntries(entries: readonly Entry[]): Entry[] {
  return [...entries].sort((a, b) => {
    if (a.accountId !== b.accountId) return a.accountId < b.accountId ? -1 : 1;
    if (a.direction !== b.direction) return a.direction < b.direction ? -1 : 1;
    if (a.currency !== b.currency) return a.currency < b.currency ? -1 : 1;
    return a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0;
  });
}

/** JSON with object keys sorted and bigints as strings: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (typeof item === "bigint") return item.toString();
    if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(item).sort()) sorted[key] = (item as Record<string, unknown>)[key];
    return sorted;
  });
}

export function fingerprintOf(request: unknown): string {
  return createHash("sha256").update(canonicalJson(request)).digest("hex");
}

/** One account's share of a transfer: what its balance row must absorb. */
export interface AccountLeg {
  accountId: bigint;
  currency: string;
  debits: bigint;
  credits: bigint;
}

/**
 * Entries summed per account, in ascending account id: the order accounts are locked in, so two
 * transfers touching the same accounts always queue in the same order and never deadlock (PY-09).
 */
export function legsByAccount(entries: readonly Entry[]): AccountLeg[] {
  const legs = new Map<bigint, AccountLeg>();
  for (const entry of entries) {
    const leg = legs.get(entry.accountId) ?? {
      accountId: entry.accountId,
      currency: entry.currency,
      debits: 0n,
      credits: 0n,
    };
    if (leg.currency !== entry.currency) {
      throw ledgerErrors.create("LEDGER_CURRENCY_MISMATCH", {
        fields: { accountId: entry.accountId.toString(), currencies: [leg.currency, entry.currency] },
      });
    }
    if (entry.direction === "D") leg.debits += entry.amount;
    else leg.credits += entry.amount;
    legs.set(entry.accountId, leg);
  }
  return [...legs.values()].sort((a, b) => (a.accountId < b.accountId ? -1 : 1));
}

/**
 * The entries of a reversal (PY-15): the original's with debit and credit swapped. With `amount`,
 * a partial reversal (a partial refund): only for a simple two-entry transfer, whose amount is
 * unambiguous; `remaining` is what earlier reversals left to reverse.
 */
export function reversalEntries(original: readonly Entry[], remaining: bigint, amount?: bigint): Entry[] {
  const full = original.reduce((sum, e) => (e.direction === "D" ? sum + e.amount : sum), 0n);
  const wanted = amount === undefined ? remaining : checkAmount(amount, "amount");
  const refuse = (reason: string) => ledgerErrors.create("LEDGER_REVERSAL_INVALID", { fields: { reason } });
  if (wanted > remaining) throw refuse(`only ${remaining} minor units are left to reverse`);
  if (wanted <= 0n) throw refuse("the transaction is already fully reversed");
  if (wanted !== full && original.length !== 2) {
    throw refuse("a partial reversal needs a two-entry transaction; reverse it in full or post entries");
  }
  return original.map((e) => ({
    accountId: e.accountId,
    currency: e.currency,
    direction: e.direction === "D" ? "C" : "D",
    amount: wanted === full ? e.amount : wanted,
  }));
}
