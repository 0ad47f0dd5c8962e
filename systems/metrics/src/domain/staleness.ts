/**
 * Staleness markers: Prometheus writes a special NaN (bits 0x7ff0000000000002) when a target
 * or a series goes away, and remote-write forwards it. A query that meets it treats the
 * series as ended there instead of carrying its last value forward for the 5-minute lookback,
 * so `rate` and alerts are right after a target vanishes (MT-05/06's ingest keeps the marker;
 * the chunk keeps its bits; the evaluator reads it here).
 *
 * @example
 * isStaleNaN(STALE_NAN);  // true
 * isStaleNaN(Number.NaN); // false: an ordinary NaN is a value
 */

/** The bit pattern Prometheus uses for a staleness marker. */
export const STALE_NAN_BITS = 0x7ff0000000000002n;

const view = new DataView(new ArrayBuffer(8));
view.setBigUint64(0, STALE_NAN_BITS);
/** The marker as a number (a NaN whose payload is 2). */
export const STALE_NAN: number = view.getFloat64(0);

/** True only for the marker's exact bits, never for other NaNs. */
export function isStaleNaN(value: number): boolean {
  if (!Number.isNaN(value)) return false;
  view.setFloat64(0, value);
  return view.getUint32(0) === 0x7ff00000 && view.getUint32(4) === 2;
}
