/**
 * The one way samples come in (MT-05/06/07), whoever brought them: remote-write, the agent's
 * batch, or the scraper (`workers/scraper.ts`). A decoded batch is validated
 * (`domain/ingest-batch.ts`: label rules, standard labels, integer ms timestamps), then either
 * published to the stream — one message per partition, resolved after the stream's acks, the
 * hot writer storing it after — or, on the direct path, appended to the tenant's TSDB as one
 * all-or-nothing batch fsynced to the WAL. Refusals are the registry's errors (a 400 naming the
 * field, a 503 for a stream that is down), so the HTTP routes throw them as they are and the
 * scraper counts them.
 *
 * @example
 * const ingest = new SampleIngest({ tsdbs, metrics, standardLabels: [], partitions: 16, stream });
 * await ingest.write(tenant, [{ labels: [["__name__", "up"], ["job", "cache"]], samples: [{ t: Date.now(), v: 1 }] }]);
 */
import type { SeriesSamples } from "../domain/head-block.ts";
import { validateBatch } from "../domain/ingest-batch.ts";
import type { Labels } from "../domain/labels.ts";
import { splitByPartition } from "../domain/series-partition.ts";
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
}

const OUT_OF_ORDER_CODES = new Set(["OUT_OF_ORDER", "DUPLICATE_TIMESTAMP", "TOO_OLD"]);

export class SampleIngest {
  readonly #options: SampleIngestOptions;

  constructor(options: SampleIngestOptions) {
    this.#options = options;
  }

  /** Stores (or publishes) the batch for `tenant`; throws the registry's error when refused. */
  async write(tenant: Tenant, decoded: IngestSeries): Promise<void> {
    const options = this.#options;
    const checked = validateBatch(decoded, { standardLabels: options.standardLabels });
    const refuse = (reason: RefusedSamplesReason, samples: number) => {
      if (samples > 0) options.metrics.refusedSamples.inc({ tenant: tenant.id, reason }, samples);
    };
    if (!checked.ok) {
      refuse("invalid", samplesIn(decoded));
      throw errors.create("METRICS_WRITE_INVALID", {
        detail: `${checked.field}: ${checked.reason}`,
        fields: { field: checked.field },
      });
    }
    if (options.stream !== undefined) {
      let published: PublishReport;
      try {
        published = await options.stream.publish(tenant.id, checked.batch);
      } catch (error) {
        throw errors.create("METRICS_STREAM_UNAVAILABLE", { detail: String(error), cause: error });
      }
      // The stream hashed the batch to partitions already: its counts, not a second hashing.
      let samples = 0;
      for (const [partition, count] of published.samplesByPartition) {
        options.metrics.partitionSamples.inc({ partition: String(partition) }, count);
        samples += count;
      }
      options.metrics.streamedSamples.inc({ tenant: tenant.id }, samples);
      return;
    }
    const db = await options.tsdbs.of(tenant);
    const result = await db.append(checked.batch, { onLimit: "skip" });
    if (!result.ok) {
      const field = `timeseries[${result.index}]`;
      const outOfOrder = OUT_OF_ORDER_CODES.has(result.code);
      refuse(outOfOrder ? "out_of_order" : "series_limit", checked.samples);
      const code = outOfOrder ? "METRICS_WRITE_OUT_OF_ORDER" : "METRICS_SERIES_LIMIT";
      throw errors.create(code, {
        detail: `${field}: ${result.detail}`,
        fields: { field, reason: result.code },
      });
    }
    const refused = new Set(result.limited.map((entry) => entry.index));
    this.#countPartitions(checked.batch.filter((_, index) => !refused.has(index)));
    options.metrics.ingestedSamples.inc({ tenant: tenant.id }, result.samples);
    if (result.limited.length > 0) {
      options.metrics.refusedSeries.inc({ tenant: tenant.id }, result.limited.length);
      refuse(
        "series_limit",
        result.limited.reduce((n, entry) => n + (checked.batch[entry.index]?.samples.length ?? 0), 0),
      );
      const first = result.limited[0]!;
      throw errors.create("METRICS_SERIES_LIMIT", {
        detail: `${result.limited.length} new series refused (first: ${first.detail}); ${result.samples} samples stored`,
        fields: { refusedSeries: result.limited.length, storedSamples: result.samples, reason: first.code },
      });
    }
  }

  #countPartitions(batch: readonly SeriesSamples[]): void {
    for (const [partition, series] of splitByPartition(batch, this.#options.partitions)) {
      this.#options.metrics.partitionSamples.inc(
        { partition: String(partition) },
        series.reduce((n, s) => n + s.samples.length, 0),
      );
    }
  }
}

function samplesIn(batch: ReadonlyArray<{ samples: readonly unknown[] }>): number {
  return batch.reduce((n, s) => n + s.samples.length, 0);
}
