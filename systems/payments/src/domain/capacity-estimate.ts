/**
 * The text's back-of-the-envelope numbers (000 §4, PY-19), as a function so a test can
 * check them and feed them a measured size: 1,000 payments/s at peak is 86.4 million a
 * day; 8 saga transitions per payment is 8,000 transitions/s; an entry is tens to
 * hundreds of bytes, so a billion entries fit in hundreds of GB.
 *
 * @example
 * const e = estimateCapacity({ paymentsPerS: 1_000, transitionsPerSaga: 8, bytesPerEntry: 150, entries: 1e9 });
 * e.paymentsPerDay;     // 86_400_000
 * e.transitionsPerS;    // 8_000
 * e.entriesStorageGb;   // 150
 */
export interface CapacityInput {
  readonly paymentsPerS: number;
  readonly transitionsPerSaga: number;
  /** Bytes one ledger entry takes on disk, row and indexes included. */
  readonly bytesPerEntry: number;
  readonly entries: number;
}

export interface CapacityEstimate {
  readonly paymentsPerDay: number;
  readonly transitionsPerS: number;
  readonly entriesStorageGb: number;
}

const SECONDS_PER_DAY = 86_400;

export function estimateCapacity(input: CapacityInput): CapacityEstimate {
  for (const [name, value] of Object.entries(input)) {
    if (!(Number.isFinite(value) && value > 0))
      throw new RangeError(`${name} must be a positive number, got ${value}`);
  }
  return {
    paymentsPerDay: input.paymentsPerS * SECONDS_PER_DAY,
    transitionsPerS: input.paymentsPerS * input.transitionsPerSaga,
    entriesStorageGb: (input.bytesPerEntry * input.entries) / 1e9,
  };
}
