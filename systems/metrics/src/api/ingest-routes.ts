/**
 * The ingest (MT-05/06): Prometheus remote-write 1.0 at `POST /api/v1/write` (protobuf
 * WriteRequest, snappy-compressed) and the agent's JSON batch at `POST /api/v1/push`. Both
 * decode, then `store/sample-ingest.ts` validates (label rules, standard labels, integer ms
 * timestamps) and appends to the tenant's TSDB as one all-or-nothing batch, fsynced to the WAL
 * before the 204. A malformed body, a bad label or an out-of-order sample refuses the whole
 * batch with a 400 in Prometheus's error shape; new series past a cardinality ceiling
 * (MT-16) are refused while the rest of the batch is stored, and the 400 says how many.
 * Every series is counted against its partition (hash of the series, MT-06).
 *
 * On the stream path (MT-07, the default in main.ts) the validated batch is published instead,
 * one message per partition, and the 204 waits for the stream's acknowledgements; the order
 * and cardinality checks then happen in the hot writer (`workers/hot-writer.ts`), after the
 * answer — a stream that is down is a 503, which remote-write senders retry.
 *
 * @example
 * // curl -X POST -H 'Authorization: Bearer mtk_…' -H 'Content-Encoding: snappy' \
 * //   -H 'Content-Type: application/x-protobuf' --data-binary @req.pb.snappy localhost:8112/api/v1/write
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { decodeWriteRequestColumns } from "../domain/remote-write.ts";
import { snappyDeclaredLength, snappyUncompress } from "../domain/snappy.ts";
import { STALE_NAN } from "../domain/staleness.ts";
import { errors } from "../errors.ts";
import { SampleIngest, type SampleIngestOptions } from "../store/sample-ingest.ts";
import type { Tenant } from "../store/tenant-repository.ts";

export interface IngestOptions extends SampleIngestOptions {
  readonly tenantOf: (request: FastifyRequest) => Tenant;
  readonly writeBodyLimitBytes: number;
  readonly writeMaxDecodedBytes: number;
  /** Bounds on one request: series and samples. */
  readonly maxSeriesPerRequest?: number;
  readonly maxSamplesPerRequest?: number;
}

const SPECIAL_VALUES: Readonly<Record<string, number>> = {
  NaN: Number.NaN,
  "+Inf": Number.POSITIVE_INFINITY,
  "-Inf": Number.NEGATIVE_INFINITY,
  stale: STALE_NAN,
};

const pushBody = {
  type: "object",
  required: ["timeseries"],
  additionalProperties: false,
  properties: {
    timeseries: {
      type: "array",
      maxItems: 100_000,
      items: {
        type: "object",
        required: ["labels", "samples"],
        additionalProperties: false,
        properties: {
          labels: {
            type: "object",
            maxProperties: 64,
            additionalProperties: { type: "string", maxLength: 4_096 },
          },
          samples: {
            type: "array",
            maxItems: 10_000,
            items: {
              type: "object",
              required: ["t", "v"],
              additionalProperties: false,
              properties: {
                t: { type: "integer", description: "Unix milliseconds" },
                v: { anyOf: [{ type: "number" }, { type: "string", enum: Object.keys(SPECIAL_VALUES) }] },
              },
            },
          },
        },
      },
    },
  },
} as const;

interface PushBody {
  timeseries: Array<{ labels: Record<string, string>; samples: Array<{ t: number; v: number | string }> }>;
}

/** Registers each route in its own plugin scope, so the binary parser serves remote-write only. */
export async function registerIngestRoutes(scope: FastifyInstance, options: IngestOptions): Promise<void> {
  const maxSeries = options.maxSeriesPerRequest ?? 100_000;
  const maxSamples = options.maxSamplesPerRequest ?? 2_000_000;

  const ingest = new SampleIngest(options);

  await scope.register(async (writeScope) => {
    writeScope.addContentTypeParser(
      ["application/x-protobuf", "application/octet-stream"],
      { parseAs: "buffer", bodyLimit: options.writeBodyLimitBytes },
      (_request, body, done) => done(null, body),
    );
    writeScope.post(
      "/api/v1/write",
      {
        schema: {
          summary: "Prometheus remote-write 1.0: a snappy-compressed protobuf WriteRequest",
          tags: ["ingest"],
        },
      },
      async (request, reply) => {
        const body = request.body;
        if (!(body instanceof Uint8Array)) {
          throw errors.create("METRICS_WRITE_MALFORMED", {
            detail: "expected Content-Type: application/x-protobuf",
          });
        }
        let decoded: ReturnType<typeof decodeWriteRequestColumns>;
        try {
          if (snappyDeclaredLength(body) > options.writeMaxDecodedBytes) {
            throw new RangeError(`uncompressed size above ${options.writeMaxDecodedBytes} bytes`);
          }
          decoded = decodeWriteRequestColumns(snappyUncompress(body, options.writeMaxDecodedBytes), {
            maxSeries,
            maxSamples,
          });
        } catch (error) {
          if (!(error instanceof RangeError)) throw error;
          throw errors.create("METRICS_WRITE_MALFORMED", { detail: error.message, cause: error });
        }
        await ingest.writeRemote(options.tenantOf(request), decoded);
        return reply.code(204).send();
      },
    );
  });

  scope.post<{ Body: PushBody }>(
    "/api/v1/push",
    {
      bodyLimit: options.writeBodyLimitBytes,
      schema: {
        summary: "The agent's JSON batch: series with their samples",
        tags: ["ingest"],
        body: pushBody,
      },
    },
    async (request, reply) => {
      const decoded = request.body.timeseries.map((s) => ({
        labels: Object.entries(s.labels),
        samples: s.samples.map(({ t, v }) => ({ t, v: typeof v === "number" ? v : SPECIAL_VALUES[v]! })),
      }));
      await ingest.write(options.tenantOf(request), decoded);
      return reply.code(204).send();
    },
  );
}
