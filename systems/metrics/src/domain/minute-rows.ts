/**
 * A batch's 1 min rows (MT-10/11) in columns: the rollup builder folds each message's samples
 * straight into them — min, max, sum, count, and the counter fields (first and last sample, the
 * reset carry: `rollup.ts`) — one row per series and minute, with no object per window or row.
 * As objects (a point, its counter, a row holder, map entries: ~10,000 rows a batch on the
 * bench's data) a batch's rows were the largest share of the service's sampled allocations; in
 * columns they are a few typed arrays a batch (one profiled bench run each: the batch's work
 * 426 → 296 ms of the main thread, its garbage collection 373 → 201 ms).
 *
 * Samples fold in time order, as the raw samples would: a minute split over two messages is one
 * row, its sum and reset carry accumulated sample by sample (so bit for bit `rollupColumns` over
 * the minute's raw samples), and a sample at or before its row's last one (out of order across
 * messages) makes the row's counter unknown, as `mergeCounters` does.
 *
 * @example
 * const rows = new MinuteRows();
 * const points = rows.fold("acme", key, seq, timestamps, values, from, to, watermark);
 * rows.length; // rows made so far; rows.t[r], rows.min[r], … rows.counterKnown[r]
 */
import { ONE_MINUTE_MS } from "./rollup.ts";
import { isStaleNaN } from "./staleness.ts";

const FIRST_CAPACITY = 1_024;

export class MinuteRows {
  /** Rows made so far; each column holds `length` meaningful entries. */
  length = 0;
  t = new Float64Array(FIRST_CAPACITY);
  min = new Float64Array(FIRST_CAPACITY);
  max = new Float64Array(FIRST_CAPACITY);
  sum = new Float64Array(FIRST_CAPACITY);
  count = new Float64Array(FIRST_CAPACITY);
  firstT = new Float64Array(FIRST_CAPACITY);
  firstV = new Float64Array(FIRST_CAPACITY);
  lastT = new Float64Array(FIRST_CAPACITY);
  lastV = new Float64Array(FIRST_CAPACITY);
  resetCarry = new Float64Array(FIRST_CAPACITY);
  /** 0 once the row's samples came out of order: no counter fields for it (NULL in the table). */
  counterKnown = new Uint8Array(FIRST_CAPACITY);
  /** The row's series: an index into `tenants` and `keys`. */
  series = new Int32Array(FIRST_CAPACITY);
  /** The last message that touched the row (points are counted per message). */
  #lastSeq = new Float64Array(FIRST_CAPACITY);
  /** The series' row made before this one, -1 for its first. */
  #previousOfSeries = new Int32Array(FIRST_CAPACITY);
  readonly tenants: string[] = [];
  readonly keys: string[] = [];
  /** Per tenant, its series by key: the interned key strings, hashed once, no name built per call. */
  readonly #seriesOfTenant = new Map<string, Map<string, number>>();
  readonly #lastRowOf: number[] = [];
  readonly #latestStartOf: number[] = [];

  /** Series with at least one row. */
  get seriesCount(): number {
    return this.keys.length;
  }

  /**
   * Folds the samples `[from, to)` of one series of message `seq` (time order) into the rows,
   * leaving out those before `minT` and staleness markers. Returns the rows this message touched
   * that it had not touched before (a new row, or one an earlier message began).
   */
  fold(
    tenant: string,
    key: string,
    seq: number,
    timestamps: Float64Array,
    values: Float64Array,
    from: number,
    to: number,
    minT: number,
  ): number {
    let points = 0;
    let series = -1;
    let row = -1;
    let rowStart = Number.NaN;
    for (let i = from; i < to; i++) {
      const t = timestamps[i]!;
      const v = values[i]!;
      if (t < minT || isStaleNaN(v)) continue;
      const start = Math.floor(t / ONE_MINUTE_MS) * ONE_MINUTE_MS;
      if (start === rowStart) {
        this.#add(row, t, v);
        continue;
      }
      if (series < 0) series = this.#seriesOf(tenant, key);
      rowStart = start;
      row = this.#rowOf(series, start);
      if (row < 0) {
        row = this.#newRow(series, start, t, v);
        this.#lastSeq[row] = seq;
        points++;
        continue;
      }
      if (this.#lastSeq[row] !== seq) {
        this.#lastSeq[row] = seq;
        points++;
      }
      // A window begun before: its counter carries on only if this sample comes after its last.
      if (this.counterKnown[row] === 1 && !(this.lastT[row]! < t)) this.counterKnown[row] = 0;
      this.#add(row, t, v);
    }
    return points;
  }

  /** One more sample in a row, after its last (Prometheus's reset rule for the carry). */
  #add(row: number, t: number, v: number): void {
    if (v < this.min[row]!) this.min[row] = v;
    if (v > this.max[row]!) this.max[row] = v;
    this.sum[row]! += v;
    this.count[row]! += 1;
    if (this.counterKnown[row] === 0) return;
    if (v < this.lastV[row]!) this.resetCarry[row]! += this.lastV[row]!;
    this.lastT[row] = t;
    this.lastV[row] = v;
  }

  #seriesOf(tenant: string, key: string): number {
    let byKey = this.#seriesOfTenant.get(tenant);
    if (byKey === undefined) {
      byKey = new Map();
      this.#seriesOfTenant.set(tenant, byKey);
    }
    let series = byKey.get(key);
    if (series === undefined) {
      series = this.keys.length;
      byKey.set(key, series);
      this.tenants.push(tenant);
      this.keys.push(key);
      this.#lastRowOf.push(-1);
      this.#latestStartOf.push(Number.NEGATIVE_INFINITY);
    }
    return series;
  }

  /** The series' row for the minute at `start`, or -1 (a minute after its latest has none yet). */
  #rowOf(series: number, start: number): number {
    if (start > this.#latestStartOf[series]!) return -1;
    for (let row = this.#lastRowOf[series]!; row >= 0; row = this.#previousOfSeries[row]!)
      if (this.t[row] === start) return row;
    return -1;
  }

  #newRow(series: number, start: number, t: number, v: number): number {
    if (this.length === this.t.length) this.#grow();
    const row = this.length++;
    this.t[row] = start;
    this.min[row] = v;
    this.max[row] = v;
    this.sum[row] = v;
    this.count[row] = 1;
    this.firstT[row] = t;
    this.firstV[row] = v;
    this.lastT[row] = t;
    this.lastV[row] = v;
    this.resetCarry[row] = 0;
    this.counterKnown[row] = 1;
    this.series[row] = series;
    this.#previousOfSeries[row] = this.#lastRowOf[series]!;
    this.#lastRowOf[series] = row;
    if (start > this.#latestStartOf[series]!) this.#latestStartOf[series] = start;
    return row;
  }

  #grow(): void {
    const bigger = <A extends Float64Array | Uint8Array | Int32Array>(a: A): A => {
      const next = new (a.constructor as new (length: number) => A)(a.length * 2);
      next.set(a);
      return next;
    };
    this.t = bigger(this.t);
    this.min = bigger(this.min);
    this.max = bigger(this.max);
    this.sum = bigger(this.sum);
    this.count = bigger(this.count);
    this.firstT = bigger(this.firstT);
    this.firstV = bigger(this.firstV);
    this.lastT = bigger(this.lastT);
    this.lastV = bigger(this.lastV);
    this.resetCarry = bigger(this.resetCarry);
    this.counterKnown = bigger(this.counterKnown);
    this.series = bigger(this.series);
    this.#lastSeq = bigger(this.#lastSeq);
    this.#previousOfSeries = bigger(this.#previousOfSeries);
  }
}
