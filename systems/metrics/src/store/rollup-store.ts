/**
 * The rollup tiers' storage (MT-09/10/11), in DuckDB — one embedded database file plus Parquet:
 *
 * - **1 min tier**: a DuckDB table `minute` (tenant, series, window start, min, max, sum, count),
 *   upserted as the rollup builder consumes the stream. Chosen over a second Gorilla TSDB or
 *   Parquet for this tier because it must be *updated* while a minute is open (samples of one
 *   minute arrive in several messages) and the update must commit in one transaction with the
 *   builder's stream position (`applied_seq`): that is what makes a redelivery after a crash a
 *   no-op (its seq is at or below the committed one) instead of a double count. Parquet files
 *   are immutable and the TSDB has no transaction spanning data and a consumer offset.
 * - **1 h tier (the cold tier)**: Parquet files, one per tenant per UTC day
 *   (`<dir>/hour/<tenant>/<YYYY-MM-DD>.parquet`, self-describing: labels inside), written with
 *   DuckDB's `COPY … (FORMAT parquet)` from the 1 min rows of hours the watermark has closed
 *   (MT-10: each tier from the previous), rewritten via tmp + rename as each hour of the day
 *   closes, and queried with SQL (`read_parquet`).
 *
 * Watermarks, per partition (a partition keeps each series' order, MT-06): its newest sample
 * minus the allowed lateness. A sample older than its partition's watermark — or inside an hour
 * already written — is late: left out of the tiers and counted (it is still in the raw tier).
 * The tenant's watermark is the lowest of its partitions' (a partition more than
 * MAX_PARTITION_LAG_MS behind the tenant's newest sample counts as idle — its series went away —
 * and does not hold it back); a window ending at or before it is closed, and an hour that closes
 * is written to Parquet. A batch spanning more than the lateness is therefore fine (each
 * partition is ordered), but a partition that lags by more than the lateness behind the closed
 * hours loses those samples from the tiers.
 *
 * Every method runs under one lock (one DuckDB connection, statements in order).
 *
 * @example
 * const store = await RollupStore.open({ dir, latenessMs: 300_000 });
 * await store.apply({ seq: 7, tenant: "acme", partition: 3, series });    // { applied: true, points, late }
 * await store.closeHours();                                  // closed hours → Parquet
 * await store.select("acme", "1m", matchers, from, to);      // rollup series
 * await store.close();
 */
import { mkdir, readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { type DuckDBConnection, DuckDBInstance } from "@duckdb/node-api";
import type { SeriesSamples } from "../domain/head-block.ts";
import type { LabelMatcher } from "../domain/label-matcher.ts";
import { type Labels, labelValue, METRIC_NAME, metricNameOf, seriesKey } from "../domain/labels.ts";
import {
  ONE_HOUR_MS,
  ONE_MINUTE_MS,
  type RollupPoint,
  rollupOfRollups,
  rollupPoints,
} from "../domain/rollup.ts";

export type RollupTier = "1m" | "1h";

export const ONE_DAY_MS = 86_400_000;
const TENANT_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** A partition further behind its tenant's newest sample than this is idle: it does not hold the hours back. */
export const MAX_PARTITION_LAG_MS = 3_600_000;

export interface RollupSeries {
  readonly labels: Labels;
  readonly points: readonly RollupPoint[];
}

export interface ApplyResult {
  /** False: this stream message was applied before (a redelivery); nothing changed. */
  readonly applied: boolean;
  /** 1 min points upserted. */
  readonly points: number;
  /** Samples older than the watermark, left out of the tiers. */
  readonly late: number;
}

/** One stream message's share: a tenant's series of one partition. */
export interface RollupMessage {
  readonly seq: number;
  readonly tenant: string;
  readonly partition: number;
  readonly series: readonly SeriesSamples[];
}

export interface RollupStoreOptions {
  readonly dir: string;
  /** How far behind a tenant's newest sample a sample may arrive and still be rolled up. */
  readonly latenessMs: number;
}

/** One row past the bound, so that reading it says "too many" (an integer: it is inlined). */
const limitOf = (maxPoints: number) => Math.min(Math.floor(maxPoints), Number.MAX_SAFE_INTEGER - 1) + 1;
const sqlString = (text: string) => `'${text.replaceAll("'", "''")}'`;
const dayName = (dayStart: number) => new Date(dayStart).toISOString().slice(0, 10);

export class RollupStore {
  readonly #instance: DuckDBInstance;
  readonly #connection: DuckDBConnection;
  readonly #options: RollupStoreOptions;
  #lock: Promise<unknown> = Promise.resolve();

  private constructor(instance: DuckDBInstance, connection: DuckDBConnection, options: RollupStoreOptions) {
    this.#instance = instance;
    this.#connection = connection;
    this.#options = options;
  }

  static async open(options: RollupStoreOptions): Promise<RollupStore> {
    await mkdir(join(options.dir, "hour"), { recursive: true });
    const instance = await DuckDBInstance.create(join(options.dir, "rollups.duckdb"));
    const connection = await instance.connect();
    await connection.run(`
      CREATE TABLE IF NOT EXISTS series (tenant VARCHAR, series VARCHAR, name VARCHAR, labels VARCHAR,
        PRIMARY KEY (tenant, series));
      CREATE TABLE IF NOT EXISTS minute (tenant VARCHAR, series VARCHAR, t BIGINT,
        min DOUBLE, max DOUBLE, sum DOUBLE, count BIGINT, PRIMARY KEY (tenant, series, t));
      CREATE TABLE IF NOT EXISTS builder_state (key VARCHAR PRIMARY KEY, value BIGINT);
      CREATE TABLE IF NOT EXISTS tenant_state (tenant VARCHAR PRIMARY KEY, max_t BIGINT, hours_closed_to BIGINT);
      CREATE TEMP TABLE staging_series (tenant VARCHAR, series VARCHAR, name VARCHAR, labels VARCHAR);
      CREATE TEMP TABLE staging_minute (tenant VARCHAR, series VARCHAR, t BIGINT,
        min DOUBLE, max DOUBLE, sum DOUBLE, count BIGINT);
      CREATE TABLE IF NOT EXISTS partition_state (tenant VARCHAR, part INTEGER, max_t BIGINT, PRIMARY KEY (tenant, part));
    `);
    return new RollupStore(instance, connection, options);
  }

  get latenessMs(): number {
    return this.#options.latenessMs;
  }

  #locked<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(work, work);
    this.#lock = run.catch(() => undefined);
    return run;
  }

  async #rows(sql: string, values: unknown[] = []): Promise<Array<Record<string, unknown>>> {
    const reader = await this.#connection.runAndReadAll(sql, values as never);
    return reader.getRowObjects() as Array<Record<string, unknown>>;
  }

  /** The stream sequence of the last message applied (0 = none). */
  appliedSeq(): Promise<number> {
    return this.#locked(async () => this.#appliedSeq());
  }

  async #appliedSeq(): Promise<number> {
    const rows = await this.#rows("SELECT value FROM builder_state WHERE key = 'applied_seq'");
    return rows.length === 0 ? 0 : Number(rows[0]!.value);
  }

  /** The tenant's watermark (its active partitions' lowest newest sample − lateness), undefined before any sample. */
  watermark(tenant: string): Promise<number | undefined> {
    return this.#locked(() => this.#watermark(tenant));
  }

  async #watermark(tenant: string): Promise<number | undefined> {
    const rows = await this.#rows(
      `SELECT min(p.max_t) AS low FROM partition_state p JOIN tenant_state s ON s.tenant = p.tenant
       WHERE p.tenant = $1 AND p.max_t >= s.max_t - ${MAX_PARTITION_LAG_MS}`,
      [tenant],
    );
    const low = rows[0]?.low;
    return low === null || low === undefined ? undefined : Number(low) - this.#options.latenessMs;
  }

  /** Rolls one stream message into the 1 min tier: `applyBatch([message])`. */
  async apply(message: RollupMessage): Promise<ApplyResult> {
    return (await this.applyBatch([message]))[0]!;
  }

  /**
   * Rolls a batch of stream messages into the 1 min tier, in ONE transaction with the
   * builder's position: the messages are applied in seq order exactly as one call each would
   * apply them (each sees the partition watermarks the ones before it moved), their rows
   * merged into one upsert, and the position set to the highest seq (or `through`, when the
   * caller also skipped messages it could not read). A message whose `seq` is at or below the
   * committed position was applied already (a redelivery after a crash between commit and
   * acks) and changes nothing. One result per message, in the order given.
   */
  applyBatch(messages: readonly RollupMessage[], through = 0): Promise<ApplyResult[]> {
    return this.#locked(async () => {
      await this.#connection.run("BEGIN TRANSACTION");
      try {
        const results = await this.#applyBatch(messages, through);
        await this.#connection.run("COMMIT");
        return results;
      } catch (error) {
        await this.#connection.run("ROLLBACK").catch(() => undefined);
        throw error;
      }
    });
  }

  async #applyBatch(messages: readonly RollupMessage[], through: number): Promise<ApplyResult[]> {
    const committed = await this.#appliedSeq();
    let position = committed;
    const known = (v: unknown) => (v === null || v === undefined ? Number.NEGATIVE_INFINITY : Number(v));
    // The batch's view of the watermark state, read once per tenant/partition, written once.
    const tenants = new Map<string, { before: number; max: number; hoursClosedTo: number }>();
    const partitions = new Map<string, { tenant: string; part: number; before: number; max: number }>();
    const tenantOf = async (tenant: string) => {
      let state = tenants.get(tenant);
      if (state === undefined) {
        const rows = await this.#rows("SELECT max_t, hours_closed_to FROM tenant_state WHERE tenant = $1", [
          tenant,
        ]);
        const before = known(rows[0]?.max_t);
        state = { before, max: before, hoursClosedTo: known(rows[0]?.hours_closed_to) };
        tenants.set(tenant, state);
      }
      return state;
    };
    const partitionOf = async (tenant: string, part: number) => {
      const id = `${tenant}\u0000${part}`;
      let state = partitions.get(id);
      if (state === undefined) {
        const rows = await this.#rows("SELECT max_t FROM partition_state WHERE tenant = $1 AND part = $2", [
          tenant,
          part,
        ]);
        const before = known(rows[0]?.max_t);
        state = { tenant, part, before, max: before };
        partitions.set(id, state);
      }
      return state;
    };
    // One row per key: DuckDB's upsert refuses to touch a row twice in one statement, and a
    // batch may carry one series (one minute) in several messages.
    const seriesRows = new Map<string, { tenant: string; key: string; name: string; labels: string }>();
    const pointRows = new Map<string, { tenant: string; key: string; point: RollupPoint }>();
    const results = new Map<RollupMessage, ApplyResult>();
    for (const message of messages.toSorted((a, b) => a.seq - b.seq)) {
      if (message.seq <= position) {
        results.set(message, { applied: false, points: 0, late: 0 });
        continue;
      }
      position = message.seq;
      const { tenant } = message;
      const tenantState = await tenantOf(tenant);
      const partition = await partitionOf(tenant, message.partition);
      // The partition's watermark as of this message (its own samples move it for the next
      // ones), and never inside an hour already written to Parquet.
      const watermark = Math.max(partition.max - this.#options.latenessMs, tenantState.hoursClosedTo);
      let late = 0;
      const points = new Set<string>();
      for (const { labels, samples } of message.series) {
        const onTime = samples.filter((s) => s.t >= watermark);
        late += samples.length - onTime.length;
        for (const s of onTime) partition.max = Math.max(partition.max, s.t);
        const rolled = rollupPoints(onTime, ONE_MINUTE_MS);
        if (rolled.length === 0) continue;
        const key = seriesKey(labels);
        const seriesId = `${tenant}\u0000${key}`;
        if (!seriesRows.has(seriesId))
          seriesRows.set(seriesId, {
            tenant,
            key,
            name: metricNameOf(labels) ?? "",
            labels: JSON.stringify(labels),
          });
        for (const point of rolled) {
          const id = `${seriesId}\u0000${point.t}`;
          const seen = pointRows.get(id)?.point;
          points.add(id);
          pointRows.set(id, {
            tenant,
            key,
            point: seen === undefined ? point : rollupOfRollups([seen, point], ONE_MINUTE_MS)[0]!,
          });
        }
      }
      tenantState.max = Math.max(tenantState.max, partition.max);
      results.set(message, { applied: true, points: points.size, late });
    }
    if (pointRows.size > 0) await this.#upsert(seriesRows.values(), pointRows.values());
    for (const p of partitions.values()) {
      if (p.max <= p.before) continue;
      await this.#connection.run(
        `INSERT INTO partition_state VALUES ($1, $2, $3::BIGINT)
         ON CONFLICT (tenant, part) DO UPDATE SET max_t = EXCLUDED.max_t`,
        [p.tenant, p.part, p.max],
      );
    }
    for (const [tenant, state] of tenants) {
      if (state.max <= state.before) continue;
      await this.#connection.run(
        `INSERT INTO tenant_state VALUES ($1, $2::BIGINT, NULL)
         ON CONFLICT (tenant) DO UPDATE SET max_t = EXCLUDED.max_t`,
        [tenant, state.max],
      );
    }
    position = Math.max(position, through);
    if (position > committed) {
      await this.#connection.run(
        `INSERT INTO builder_state VALUES ('applied_seq', $1::BIGINT)
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
        [position],
      );
    }
    return messages.map((m) => results.get(m)!);
  }

  /**
   * Rows go through the appender into per-connection staging tables (inside the caller's
   * transaction), then one upsert each: a VALUES list of thousands of rows costs DuckDB
   * ~0.5 ms a row to plan, the appender a few µs.
   */
  async #upsert(
    seriesRows: Iterable<{ tenant: string; key: string; name: string; labels: string }>,
    pointRows: Iterable<{ tenant: string; key: string; point: RollupPoint }>,
  ): Promise<void> {
    const seriesStage = await this.#connection.createAppender("staging_series", "main", "temp");
    for (const { tenant, key, name, labels } of seriesRows) {
      seriesStage.appendVarchar(tenant);
      seriesStage.appendVarchar(key);
      seriesStage.appendVarchar(name);
      seriesStage.appendVarchar(labels);
      seriesStage.endRow();
    }
    seriesStage.closeSync(); // flushes
    const pointStage = await this.#connection.createAppender("staging_minute", "main", "temp");
    for (const { tenant, key, point } of pointRows) {
      pointStage.appendVarchar(tenant);
      pointStage.appendVarchar(key);
      pointStage.appendBigInt(BigInt(point.t));
      pointStage.appendDouble(point.min);
      pointStage.appendDouble(point.max);
      pointStage.appendDouble(point.sum);
      pointStage.appendBigInt(BigInt(point.count));
      pointStage.endRow();
    }
    pointStage.closeSync();
    await this.#connection.run(`
      INSERT INTO series SELECT * FROM temp.staging_series ON CONFLICT (tenant, series) DO NOTHING;
      INSERT INTO minute SELECT * FROM temp.staging_minute ON CONFLICT (tenant, series, t) DO UPDATE SET
        min = least(min, EXCLUDED.min), max = greatest(max, EXCLUDED.max),
        sum = sum + EXCLUDED.sum, count = count + EXCLUDED.count;
      DELETE FROM temp.staging_series;
      DELETE FROM temp.staging_minute;
    `);
  }

  /**
   * Writes every hour the watermark has closed to the 1 h tier: the hour's 1 min rows
   * aggregated (min of mins, max of maxes, sum of sums, sum of counts) into its day's Parquet
   * file, rewritten whole via tmp + rename. Idempotent: a closed hour's rows never change, so
   * writing it again (a crash before `hours_closed_to` moved) writes the same rows.
   * Returns the hours written.
   */
  closeHours(): Promise<number> {
    return this.#locked(async () => {
      let written = 0;
      const tenants = await this.#rows("SELECT tenant, hours_closed_to FROM tenant_state");
      for (const row of tenants) {
        const tenant = String(row.tenant);
        const watermark = await this.#watermark(tenant);
        if (watermark === undefined) continue;
        const closeTo = Math.floor(watermark / ONE_HOUR_MS) * ONE_HOUR_MS;
        const from = row.hours_closed_to === null ? Number.MIN_SAFE_INTEGER : Number(row.hours_closed_to);
        if (closeTo <= from) continue;
        const hours = await this.#rows(
          `SELECT DISTINCT (t // ${ONE_HOUR_MS}) * ${ONE_HOUR_MS} AS hour FROM minute
           WHERE tenant = $1 AND t >= $2::BIGINT AND t < $3::BIGINT ORDER BY hour`,
          [tenant, from, closeTo],
        );
        const byDay = Map.groupBy(
          hours.map((h) => Number(h.hour)),
          (hour) => Math.floor(hour / ONE_DAY_MS) * ONE_DAY_MS,
        );
        for (const [day, dayHours] of byDay) {
          await this.#writeDay(tenant, day, dayHours[0]!, dayHours.at(-1)! + ONE_HOUR_MS);
          written += dayHours.length;
        }
        await this.#connection.run("UPDATE tenant_state SET hours_closed_to = $2::BIGINT WHERE tenant = $1", [
          tenant,
          closeTo,
        ]);
      }
      return written;
    });
  }

  async #writeDay(tenant: string, day: number, from: number, to: number): Promise<void> {
    if (!TENANT_PATTERN.test(tenant))
      throw new RangeError(`tenant id ${JSON.stringify(tenant)} is not a safe path`);
    const dir = join(this.#options.dir, "hour", tenant);
    await mkdir(dir, { recursive: true });
    const file = join(dir, `${dayName(day)}.parquet`);
    const tmp = `${file}.tmp`;
    const exists = await stat(file).then(
      () => true,
      () => false,
    );
    const fresh = `SELECT m.series, s.name, s.labels, (m.t // ${ONE_HOUR_MS}) * ${ONE_HOUR_MS} AS t,
        min(m.min) AS min, max(m.max) AS max, sum(m.sum) AS sum, sum(m.count)::BIGINT AS count
      FROM minute m JOIN series s ON s.tenant = m.tenant AND s.series = m.series
      WHERE m.tenant = ${sqlString(tenant)} AND m.t >= ${from} AND m.t < ${to}
      GROUP BY m.series, s.name, s.labels, (m.t // ${ONE_HOUR_MS}) * ${ONE_HOUR_MS}`;
    const kept = exists
      ? `SELECT series, name, labels, t, min, max, sum, count FROM read_parquet(${sqlString(file)})
         WHERE t < ${from} OR t >= ${to} UNION ALL `
      : "";
    await this.#connection.run(
      `COPY (${kept}${fresh} ORDER BY name, series, t) TO ${sqlString(tmp)} (FORMAT parquet)`,
    );
    await rename(tmp, file);
  }

  /** The end of the data a tier holds for the tenant (exclusive): where finer tiers take over. */
  closedTo(tenant: string, tier: RollupTier): Promise<number | undefined> {
    return this.#locked(async () => {
      if (tier === "1h") {
        const rows = await this.#rows("SELECT hours_closed_to FROM tenant_state WHERE tenant = $1", [tenant]);
        const to = rows[0]?.hours_closed_to;
        return to === null || to === undefined ? undefined : Number(to);
      }
      const watermark = await this.#watermark(tenant);
      return watermark === undefined ? undefined : Math.floor(watermark / ONE_MINUTE_MS) * ONE_MINUTE_MS;
    });
  }

  /**
   * The rollup points of the tenant's series matching `matchers` whose window starts in
   * [mint, maxt], from the 1 min table or the 1 h Parquet files (SQL over `read_parquet`).
   * At most `maxPoints` rows are read (a query's bound): past it, RangeError.
   */
  select(
    tenant: string,
    tier: RollupTier,
    matchers: readonly LabelMatcher[],
    mint: number,
    maxt: number,
    maxPoints = Number.MAX_SAFE_INTEGER,
  ): Promise<RollupSeries[]> {
    return this.#locked(async () => {
      const named = matchers.find((m) => m.name === METRIC_NAME && m.type === "=");
      const nameFilter = named === undefined ? "" : ` AND name = ${sqlString(named.value)}`;
      let rows: Array<Record<string, unknown>>;
      if (tier === "1m") {
        rows = await this.#rows(
          `SELECT s.labels, m.series, m.t, m.min, m.max, m.sum, m.count FROM minute m
           JOIN series s ON s.tenant = m.tenant AND s.series = m.series
           WHERE m.tenant = $1 AND m.t >= $2::BIGINT AND m.t <= $3::BIGINT${nameFilter.replace("name", "s.name")}
           ORDER BY m.series, m.t LIMIT ${limitOf(maxPoints)}`,
          [tenant, Math.max(mint, Number.MIN_SAFE_INTEGER), Math.min(maxt, Number.MAX_SAFE_INTEGER)],
        );
      } else {
        const files = await this.#dayFiles(tenant, mint, maxt);
        if (files.length === 0) return [];
        rows = await this.#rows(
          `SELECT labels, series, t, min, max, sum, count
           FROM read_parquet([${files.map(sqlString).join(", ")}])
           WHERE t >= $1::BIGINT AND t <= $2::BIGINT${nameFilter} ORDER BY series, t LIMIT ${limitOf(maxPoints)}`,
          [Math.max(mint, Number.MIN_SAFE_INTEGER), Math.min(maxt, Number.MAX_SAFE_INTEGER)],
        );
      }
      if (rows.length > maxPoints) throw new RangeError(`more than ${maxPoints} rollup points in the range`);
      const out: RollupSeries[] = [];
      let current: { labels: Labels; key: string; points: RollupPoint[] } | undefined;
      for (const row of rows) {
        const key = String(row.series);
        if (current?.key !== key) {
          const labels = JSON.parse(String(row.labels)) as Labels;
          const keep = matchers.every((m) => m.matches(labelValue(labels, m.name) ?? ""));
          current = { labels, key, points: [] };
          if (keep) out.push(current);
        }
        current.points.push({
          t: Number(row.t),
          min: Number(row.min),
          max: Number(row.max),
          sum: Number(row.sum),
          count: Number(row.count),
        });
      }
      return out;
    });
  }

  async #dayFiles(tenant: string, mint: number, maxt: number): Promise<string[]> {
    if (!TENANT_PATTERN.test(tenant)) return [];
    const dir = join(this.#options.dir, "hour", tenant);
    const names = await readdir(dir).catch(() => [] as string[]);
    return names
      .filter((name) => name.endsWith(".parquet"))
      .filter((name) => {
        const day = Date.parse(`${name.slice(0, 10)}T00:00:00Z`);
        return day + ONE_DAY_MS > mint && day <= maxt;
      })
      .sort()
      .map((name) => join(dir, name));
  }

  /**
   * Retention (MT-09/18): deletes 1 min rows whose window starts before `minuteBefore` (and
   * the series left without any), and 1 h day files whose whole day ends at or before
   * `hourBefore`. Returns what went.
   */
  reap(cutoffs: {
    minuteBefore: number;
    hourBefore: number;
  }): Promise<{ minuteRows: number; hourFiles: number }> {
    return this.#locked(async () => {
      const deleted = await this.#rows("DELETE FROM minute WHERE t < $1::BIGINT RETURNING 1 AS one", [
        cutoffs.minuteBefore,
      ]);
      if (deleted.length > 0) {
        await this.#connection.run(
          `DELETE FROM series s WHERE NOT EXISTS
           (SELECT 1 FROM minute m WHERE m.tenant = s.tenant AND m.series = s.series)`,
        );
      }
      let hourFiles = 0;
      const root = join(this.#options.dir, "hour");
      for (const tenant of await readdir(root).catch(() => [] as string[])) {
        for (const name of await readdir(join(root, tenant)).catch(() => [] as string[])) {
          const day = Date.parse(`${name.slice(0, 10)}T00:00:00Z`);
          if (!name.endsWith(".parquet") || !(day + ONE_DAY_MS <= cutoffs.hourBefore)) continue;
          await rm(join(root, tenant, name), { force: true });
          hourFiles++;
        }
      }
      return { minuteRows: deleted.length, hourFiles };
    });
  }

  /** Waits for the statement in flight, then closes the database. */
  async close(): Promise<void> {
    await this.#locked(async () => {
      this.#connection.closeSync();
      this.#instance.closeSync();
    });
  }
}
