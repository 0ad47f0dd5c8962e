/**
 * A quantile from cumulative histogram buckets, the way Prometheus's `histogram_quantile`
 * reads them (WH-24: commit→2xx p50/p95/p99 come from the latency histogram's buckets, not
 * from a list of samples): find the bucket holding rank q·n and interpolate linearly inside
 * it. The answer is only as fine as the buckets: it lies between the bucket's bounds, and a
 * rank in the +Inf bucket answers the largest finite bound.
 *
 * @example
 * bucketQuantile(0.5, [{ le: 0.1, count: 2 }, { le: 0.2, count: 6 }, { le: Infinity, count: 8 }]); // 0.15
 */

export interface CumulativeBucket {
  /** Upper bound (inclusive); the last bucket is +Infinity. */
  le: number;
  /** Observations <= le. */
  count: number;
}

/** The q-quantile (0 <= q <= 1) of the histogram, or undefined when it holds no observation. */
export function bucketQuantile(q: number, buckets: readonly CumulativeBucket[]): number | undefined {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`q must be in [0, 1], got ${q}`);
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let lowerLe = 0;
  let lowerCount = 0;
  for (const bucket of sorted) {
    if (bucket.count < lowerCount) throw new RangeError("bucket counts must be cumulative");
    if (bucket.count >= rank && bucket.count > 0) {
      if (bucket.le === Number.POSITIVE_INFINITY) return lowerLe;
      const inBucket = bucket.count - lowerCount;
      if (inBucket === 0) return bucket.le;
      return lowerLe + ((bucket.le - lowerLe) * (rank - lowerCount)) / inBucket;
    }
    lowerLe = bucket.le;
    lowerCount = bucket.count;
  }
  return lowerLe;
}
