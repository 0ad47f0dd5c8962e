/**
 * MT-03's batch as pure code: the closed points become snappy-compressed remote-write bodies
 * the ingest's own decoder reads back, each series once with its samples in time order, cut
 * under a sample bound without splitting a series.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { agentBatches } from "../src/domain/agent-batch.ts";
import type { SeriesSamples } from "../src/domain/head-block.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { decodeWriteRequest } from "../src/domain/remote-write.ts";
import { snappyUncompress } from "../src/domain/snappy.ts";

const T0 = Date.UTC(2026, 0, 1);
const decode = (body: Uint8Array) =>
  decodeWriteRequest(snappyUncompress(body, 1 << 24), { maxSeries: 1e6, maxSamples: 1e7 }).series;

test("MT-03 a batch is a snappy-compressed remote-write request the ingest decodes, smaller than its protobuf", () => {
  const points: SeriesSamples[] = [];
  for (let w = 0; w < 2; w++)
    for (let i = 0; i < 200; i++)
      points.push({
        labels: labelsFromRecord({
          __name__: "http_requests_total",
          route: `/api/v1/orders/${i}`,
          code: "200",
        }),
        samples: [{ t: T0 + (w + 1) * 10_000, v: 100 * i + w }],
      });
  const [batch, ...rest] = agentBatches(points);
  assert.equal(rest.length, 0);
  assert.equal(batch!.samples, 400);
  assert.ok(
    batch!.body.length * 3 < batch!.rawBytes,
    `${batch!.body.length} B compressed of ${batch!.rawBytes} B`,
  );
  const series = decode(batch!.body);
  assert.equal(series.length, 200, "a series closed in two windows is one entry");
  assert.deepEqual(series[7]!.samples, [
    { t: T0 + 10_000, v: 700 },
    { t: T0 + 20_000, v: 701 },
  ]);
});

test("MT-03 a cut past maxSamples becomes several batches, no series split, every sample once", () => {
  const points: SeriesSamples[] = [];
  for (let i = 0; i < 25; i++)
    points.push({
      labels: labelsFromRecord({ __name__: "g", i: String(i) }),
      samples: [
        { t: T0 + 20_000, v: i },
        { t: T0 + 10_000, v: -i },
      ],
    });
  const batches = agentBatches(points, { maxSamples: 10 });
  assert.deepEqual(
    batches.map((b) => b.samples),
    [10, 10, 10, 10, 10],
  );
  const all = batches.flatMap((b) => decode(b.body));
  assert.equal(all.length, 25);
  assert.ok(all.every((s) => s.samples.length === 2 && s.samples[0]!.t < s.samples[1]!.t));
});
