/**
 * The acquirer's D+1 settlement file (PY-10): one CSV row per capture and refund
 * of a UTC day, published once the day is over, and the differences a test can
 * inject into it (a dropped row, a changed amount, a row nobody sent) together with
 * the list of what was injected, so a reconciliation test checks that it found
 * exactly those and nothing else.
 *
 * Columns: `idempotency_key` (the authorization's key for a capture, the refund's
 * key for a refund), `authorization_id`, `operation` (capture | refund),
 * `amount_minor`, `currency`, `fee_minor` (the acquirer's fee: `feeBps` of a capture,
 * rounded half up; 0 for refunds), `settled_at` (ISO 8601 UTC instant the acquirer
 * recorded the operation).
 *
 * @example
 * const rows = settlementRows(state.operationsBetween(day.startMs, day.endMs), { feeBps: 150 });
 * const injected = chooseDifferences(rows, { dropRows: 1, changeAmounts: 1, unknownRows: 1 }, rng, day);
 * renderSettlementCsv(applyDifferences(rows, injected));
 */
import { hasMinorUnit } from "@casebook/kit/iso-4217";
import { int, type RandomSource, shuffle } from "@casebook/kit/random";

/** A money movement the acquirer settles: what its D+1 file reports. Voids move no money. */
export interface SettledOperation {
  readonly operation: "capture" | "refund";
  /** The authorization's key for a capture, the refund's key for a refund. */
  readonly idempotencyKey: string;
  readonly authorizationId: string;
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly atMs: number;
}

export const SETTLEMENT_COLUMNS = [
  "idempotency_key",
  "authorization_id",
  "operation",
  "amount_minor",
  "currency",
  "fee_minor",
  "settled_at",
] as const;

const DAY_MS = 86_400_000;
const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;
/** Basis points in a whole: a fee of 150 bps is 1.5 %. */
const BPS = 10_000n;

export interface SettlementRow {
  readonly idempotencyKey: string;
  readonly authorizationId: string;
  readonly operation: "capture" | "refund";
  readonly amountMinor: bigint;
  readonly currency: string;
  readonly feeMinor: bigint;
  readonly settledAtMs: number;
}

export interface UtcDay {
  readonly date: string;
  readonly startMs: number;
  readonly endMs: number;
}

/** How many differences of each kind to inject into one day's file. */
export interface DifferenceRequest {
  readonly dropRows: number;
  readonly changeAmounts: number;
  readonly unknownRows: number;
}

export type InjectedDifference =
  | { readonly kind: "dropped"; readonly row: SettlementRow }
  | { readonly kind: "amount-changed"; readonly row: SettlementRow; readonly originalAmountMinor: bigint }
  | { readonly kind: "unknown"; readonly row: SettlementRow };

/** The UTC day `YYYY-MM-DD` as [startMs, endMs); undefined when it is no calendar date (2026-02-30). */
export function utcDay(date: string): UtcDay | undefined {
  const match = DATE_PATTERN.exec(date);
  if (!match) return undefined;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const startMs = Date.UTC(year, month - 1, day);
  const back = new Date(startMs);
  if (back.getUTCFullYear() !== year || back.getUTCMonth() !== month - 1 || back.getUTCDate() !== day) {
    return undefined;
  }
  return { date, startMs, endMs: startMs + DAY_MS };
}

/** The acquirer's fee on a capture: `feeBps` of the amount, rounded half up, in minor units. */
export function feeOf(amountMinor: bigint, feeBps: number): bigint {
  return (amountMinor * BigInt(feeBps) + BPS / 2n) / BPS;
}

function byTimeThenKey(a: SettlementRow, b: SettlementRow): number {
  if (a.settledAtMs !== b.settledAtMs) return a.settledAtMs - b.settledAtMs;
  if (a.idempotencyKey !== b.idempotencyKey) return a.idempotencyKey < b.idempotencyKey ? -1 : 1;
  return a.operation < b.operation ? -1 : a.operation > b.operation ? 1 : 0;
}

/** The day's rows as the acquirer really recorded them, before any injected difference. */
export function settlementRows(
  operations: readonly SettledOperation[],
  options: { feeBps: number },
): SettlementRow[] {
  return operations
    .map((op) => ({
      idempotencyKey: op.idempotencyKey,
      authorizationId: op.authorizationId,
      operation: op.operation,
      amountMinor: op.amountMinor,
      currency: op.currency,
      feeMinor: op.operation === "capture" ? feeOf(op.amountMinor, options.feeBps) : 0n,
      settledAtMs: op.atMs,
    }))
    .sort(byTimeThenKey);
}

function hex(rng: RandomSource): string {
  return int(rng, 2 ** 32)
    .toString(16)
    .padStart(8, "0");
}

function unknownRow(rng: RandomSource, day: UtcDay, currency: string): SettlementRow {
  return {
    idempotencyKey: `unknown-${hex(rng)}${hex(rng)}`,
    authorizationId: `auth_${hex(rng)}${hex(rng)}`,
    operation: "capture",
    amountMinor: BigInt(100 + int(rng, 100_000)),
    currency,
    feeMinor: 0n,
    settledAtMs: day.startMs + int(rng, DAY_MS),
  };
}

/**
 * Picks which rows to drop and which amounts to change (distinct rows, chosen by
 * `rng`) and makes up the unknown rows. The caller checks that
 * `dropRows + changeAmounts <= rows.length`.
 */
export function chooseDifferences(
  rows: readonly SettlementRow[],
  request: DifferenceRequest,
  rng: RandomSource,
  day: UtcDay,
): InjectedDifference[] {
  if (request.dropRows + request.changeAmounts > rows.length) {
    throw new RangeError(`cannot touch ${request.dropRows + request.changeAmounts} of ${rows.length} rows`);
  }
  const picked = shuffle(rng, [...rows]);
  const dropped = picked.slice(0, request.dropRows).map((row) => ({ kind: "dropped" as const, row }));
  const changed = picked.slice(request.dropRows, request.dropRows + request.changeAmounts).map((row) => {
    // Never 0: a "change" of nothing would be an injected difference no reconciliation could find.
    const deltaMinor = BigInt(1 + int(rng, 999));
    return {
      kind: "amount-changed" as const,
      row: { ...row, amountMinor: row.amountMinor + deltaMinor },
      originalAmountMinor: row.amountMinor,
    };
  });
  const currency = rows[0]?.currency ?? "BRL";
  const unknown = Array.from({ length: request.unknownRows }, () => ({
    kind: "unknown" as const,
    row: unknownRow(rng, day, currency),
  }));
  return [...dropped, ...changed, ...unknown];
}

function rowKey(row: SettlementRow): string {
  return `${row.operation}\u0000${row.idempotencyKey}`;
}

/** The file as published: true rows, minus the dropped, with changed amounts, plus the unknown. */
export function applyDifferences(
  rows: readonly SettlementRow[],
  differences: readonly InjectedDifference[],
): SettlementRow[] {
  const dropped = new Set<string>();
  const changed = new Map<string, SettlementRow>();
  const added: SettlementRow[] = [];
  for (const difference of differences) {
    if (difference.kind === "dropped") dropped.add(rowKey(difference.row));
    else if (difference.kind === "amount-changed") changed.set(rowKey(difference.row), difference.row);
    else added.push(difference.row);
  }
  const kept = rows.filter((row) => !dropped.has(rowKey(row))).map((row) => changed.get(rowKey(row)) ?? row);
  return [...kept, ...added].sort(byTimeThenKey);
}

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** The CSV text, header first, one `\n`-terminated line per row. */
export function renderSettlementCsv(rows: readonly SettlementRow[]): string {
  const lines = rows.map((row) =>
    [
      row.idempotencyKey,
      row.authorizationId,
      row.operation,
      String(row.amountMinor),
      row.currency,
      String(row.feeMinor),
      new Date(row.settledAtMs).toISOString(),
    ]
      .map(csvField)
      .join(","),
  );
  return [SETTLEMENT_COLUMNS.join(","), ...lines].map((line) => `${line}\n`).join("");
}

function splitCsvLine(line: string): string[] {
  const fields: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        current += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else current += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ",") {
      fields.push(current);
      current = "";
    } else current += ch;
  }
  fields.push(current);
  return fields;
}

/**
 * Parses a file written by `renderSettlementCsv` (fields without line breaks), for
 * a reconciler or a test. Throws on a wrong header or a malformed row, naming the line.
 */
export function parseSettlementCsv(text: string): SettlementRow[] {
  const lines = text.split(/\r?\n/).filter((line) => line !== "");
  if (lines[0] !== SETTLEMENT_COLUMNS.join(",")) {
    throw new SyntaxError(`settlement file: line 1 is not the header ${SETTLEMENT_COLUMNS.join(",")}`);
  }
  return lines.slice(1).map((line, index) => {
    const fields = splitCsvLine(line);
    const [key, authorizationId, operation, amount, currency, fee, settledAt] = fields;
    const settledAtMs = Date.parse(settledAt ?? "");
    if (
      fields.length !== SETTLEMENT_COLUMNS.length ||
      (operation !== "capture" && operation !== "refund") ||
      !/^-?\d+$/.test(amount ?? "") ||
      !/^-?\d+$/.test(fee ?? "") ||
      !hasMinorUnit(currency) ||
      Number.isNaN(settledAtMs)
    ) {
      throw new SyntaxError(`settlement file: malformed row on line ${index + 2}`);
    }
    return {
      idempotencyKey: key!,
      authorizationId: authorizationId!,
      operation,
      amountMinor: BigInt(amount!),
      currency: currency!,
      feeMinor: BigInt(fee!),
      settledAtMs,
    };
  });
}
