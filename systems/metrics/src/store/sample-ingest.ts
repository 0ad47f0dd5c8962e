/**
 * The one way samples come in (MT-05/06/07), whoever brought them: remote-write, the agent's
 * batch, or the scraper (`workers/scraper.ts`). A decoded batch is validated
 * (`domain/ingest-batch.ts`: label rules, standard labels, integer ms timestamps), then either
 * published to the stream — one message per partition, resolved after the stream's acks, the
 * hot writer storing it after — or, on the direct path, appended to the tenant's TSDB as one
 * all-or-nothing batch fsynced to the WAL. Refusals are the registry's errors (a 400 naming the
 * field, a 503 for a stream that is down), so the HTTP routes throw them as they are and the
 * scraper counts them. A remote-write request arrives in columns (`writeRemote`): its series are
 * found by their label bytes among those met before (`domain/series-interner.ts`), so the label
 * rules, the canonical key, the partition and the stream's label block cost once per series,
 * not once per request.
 *
 * @example
 * const ingest = new SampleIngest({ tsdbs, metrics, standardLabels: [], partitions: 16, stream });
 * await ingest.write(tenant, [{ labels: [["__name__", "up"], ["job", "cache"]], samples: [{ t: Date.now(), v: 1 }] }]);
 */
import { type BatchProblem, validateBatch, validateWriteColumns } from "../domain/ingest-batch.ts";
import type { Labels } from "../domain/labels.ts";
import type { WriteRequestColumns } from "../domain/remote-write.ts";
import { columnsOf, type SampleColumns } from "../domain/sample-columns.ts";
import { DEFAULT_INTERNED_SERIES, SeriesInterner } from "../domain/series-interner.ts";
import { type PartitionedSeries, partitionedSeries } from "../domain/series-partition.ts";
import { errors } from "../errors.ts";
import type { RefusedSamplesReason, SystemMetrics } from "../metrics.ts";
import type { PublishReport, SampleStream } from "./sample-stream.ts";
import type { Tenant } from "./tenant-repository.ts";
import type { TenantTsdbs } from "./tenant-tsdbs.ts";

/** A decoded batch, before validation: what remote-write, the agent's JSON and the scraper produce. */
export type IngestSeries = Parameters<typeof validateBatch>[0];

export interface SampleIngestOptions {
  readonly tsdbs: TenantTsdbs;
  readonly metrics: SystemMetrics;
  readonly standardLabels: Labels;
  readonly partitions: number;
  /**
   * MT-07: when set, an accepted batch goes onto the stream (resolved after the stream's acks)
   * and the hot writer stores it; unset, it is appended to the TSDB here (the direct path).
   */
  readonly stream?: SampleStream | undefined;
  /** Label sets remembered by their remote-write bytes (checked and keyed once). Default 262,144. */
  readonly maxInternedSeries?: number;
}

const OUT_OF_ORDER_CODES = new Set(["OUT_OF_ORDER", "DUPLICATE_TIMESTAMP", "TOO_OLD"]);

export class SampleIngest {
  readonly #options: SampleIngestOptions;

  constructor(options: SampleIngestOptions) {
    this.#options = options;
    this.#interner = new SeriesInterner({ maxEntries: options.maxInternedSeries ?? DEFAULT_INTERNED_SERIES });
  }

  /** Stores (or publishes) the batch for `tenant`; throws the registry's error when refused. */
  async write(tenant: Tenant, decoded: IngestSeries): Promise<void> {
    const checked = validateBatch(decoded, { standardLabels: this.#options.standardLabels });
    if (!checked.ok) this.#refuseInvalid(tenant, checked, samplesIn(decoded));
    await this.#store(tenant, columnsOf(checked.batch, this.#entryOf), checked.samples);
  }

  /**
   * A remote-write request read in columns (`decodeWriteRequestColumns`): its series found by
   * their label bytes among those met before — the rules checked and the series keyed and
   * hashed to its partition once per label set, not once per request.
   */
  async writeRemote(tenant: Tenant, request: WriteRequestColumns): Promise<void> {
    const checked = validateWriteColumns(request, this.#interner, this.#entryOf, {
      standardLabels: this.#options.standardLabels,
    });
    if (!checked.ok) this.#refuseInvalid(tenant, checked, request.timestamps.length);
    await this.#store(tenant, checked.batch, checked.samples);
  }

  readonly #interner: SeriesInterner<PartitionedSeries>;
  readonly #entryOf = (labels: Labels): PartitionedSeries =>
    partitionedSeries(labels, this.#options.partitions);

  #refuse(tenant: Tenant, reason: RefusedSamplesReason, samples: number): void {
    if (samples > 0) this.#options.metrics.refusedSamples.inc({ tenant: tenant.id, reason }, samples);
  }

  #refuseInvalid(tenant: Tenant, problem: BatchProblem, samples: number): never {
    this.#refuse(tenant, "invalid", samples);
    throw errors.create("METRICS_WRITE_INVALID", {
      detail: `${problem.field}: ${problem.reason}`,
      fields: { field: problem.field },
    });
  }

  async #store(tenant: Tenant, batch: SampleColumns<PartitionedSeries>, sampleCount: number): Promise<void> {
    const options = this.#options;
    if (options.stream !== undefined) {
      let published: PublishReport;
      try {
        published = await options.stream.publishColumns(tenant.id, batch);
      } catch (error) {
        throw errors.create("METRICS_STREAM_UNAVAILABLE", { detail: String(error), cause: error });
      }
      for (const [partition, count] of published.samplesByPartition)
        options.metrics.partitionSamples.inc({ partition: String(partition) }, count);
      options.metrics.streamedSamples.inc({ tenant: tenant.id }, sampleCount);
      return;
    }
    const db = await options.tsdbs.of(tenant);
    // The batch as it is: its series carry their key, so the head does not key them again.
    const result = await db.appendColumns(batch, { onLimit: "skip" });
    if (!result.ok) {
      const field = `timeseries[${result.index}]`;
      const outOfOrder = OUT_OF_ORDER_CODES.has(result.code);
      this.#refuse(tenant, outOfOrder ? "out_of_order" : "series_limit", sampleCount);
      const code = outOfOrder ? "METRICS_WRITE_OUT_OF_ORDER" : "METRICS_SERIES_LIMIT";
      throw errors.create(code, {
        detail: `${field}: ${result.detail}`,
        fields: { field, reason: result.code },
      });
    }
    const refused = new Set(result.limited.map((entry) => entry.index));
    const byPartition = new Map<number, number>();
    for (let i = 0; i < batch.series.length; i++) {
      if (refused.has(i)) continue;
      const { partition } = batch.series[i]!;
      byPartition.set(
        partition,
        (byPartition.get(partition) ?? 0) + batch.offsets[i + 1]! - batch.offsets[i]!,
      );
    }
    for (const [partition, count] of byPartition)
      options.metrics.partitionSamples.inc({ partition: String(partition) }, count);
    options.metrics.ingestedSamples.inc({ tenant: tenant.id }, result.samples);
    if (result.limited.length > 0) {
      options.metrics.refusedSeries.inc({ tenant: tenant.id }, result.limited.length);
      this.#refuse(
        tenant,
        "series_limit",
        result.limited.reduce((n, { index }) => n + batch.offsets[index + 1]! - batch.offsets[index]!, 0),
      );
      const first = result.limited[0]!;
      throw errors.create("METRICS_SERIES_LIMIT", {
        detail: `${result.limited.length} new series refused (first: ${first.detail}); ${result.samples} samples stored`,
        fields: { refusedSeries: result.limited.length, storedSamples: result.samples, reason: first.code },
      });
    }
  }
}

function samplesIn(batch: ReadonlyArray<{ samples: readonly unknown[] }>): number {
  return batch.reduce((n, s) => n + s.samples.length, 0);
}
