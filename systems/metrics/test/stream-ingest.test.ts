/**
 * MT-07 on the default path, in one process (the in-process log): the ingest answers 204 only
 * once the stream holds the batch — one message per partition the batch touches (MT-06) — and
 * the hot writer, a separate consumer, stores it where queries find it; new series past a
 * tenant's ceiling are refused by the hot writer after the answer and counted (MT-16).
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { splitByPartition } from "../src/domain/series-partition.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { main, type RunningSystem } from "../src/main.ts";
import { SAMPLE_STREAM } from "../src/store/sample-stream.ts";

const T0 = Date.UTC(2026, 0, 1);
let running: RunningSystem;
let dataDir: string;
let key: string;
let limitedKey: string;
let receiver: Server;
const notifications: Array<{
  groupLabels: { alertname: string };
  alerts: Array<{ labels: Record<string, string>; annotations: Record<string, string> }>;
}> = [];

before(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      notifications.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-stream-"));
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_PARTITIONS: "4",
    METRICS_ALERT_INTERVAL_MS: "200",
    METRICS_ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/alerts`,
  });
  key = running.bootstrap!.apiKey;
  const limited = await running.tenants.createIfAbsent({
    id: "capped",
    name: "capped",
    maxSeriesPerMetric: 2,
  });
  limitedKey = limited!.apiKey.key;
});
after(async () => {
  await Promise.allSettled([running?.close(), new Promise((resolve) => receiver?.close(resolve))]);
  await rm(dataDir, { recursive: true, force: true });
});

function write(
  apiKey: string,
  series: Array<{ labels: ReturnType<typeof labelsFromRecord>; samples: Array<{ t: number; v: number }> }>,
) {
  return running.service.app.inject({
    method: "POST",
    url: "/api/v1/write",
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/x-protobuf",
      "content-encoding": "snappy",
    },
    payload: Buffer.from(snappyCompress(encodeWriteRequest(series))),
  });
}

async function query(apiKey: string, promql: string, timeMs: number) {
  const res = await running.service.app.inject({
    url: `/api/v1/query?query=${encodeURIComponent(promql)}&time=${timeMs / 1000}`,
    headers: { authorization: `Bearer ${apiKey}` },
  });
  return JSON.parse(res.body);
}

test("MT-07 the ingest answers after the stream's ack; the hot writer stores what the stream holds", async () => {
  assert.equal(running.stream?.client.backend, "in-process");
  const series = Array.from({ length: 12 }, (_, i) => ({
    labels: labelsFromRecord({ __name__: "streamed", instance: `host-${i}` }),
    samples: [
      { t: T0, v: i },
      { t: T0 + 15_000, v: i + 1 },
    ],
  }));
  const before = (await running.stream!.client.streamState(SAMPLE_STREAM)).messages;
  const res = await write(key, series);
  assert.equal(res.statusCode, 204, res.body);
  const touched = splitByPartition(series, 4).size;
  assert.equal((await running.stream!.client.streamState(SAMPLE_STREAM)).messages, before + touched);
  const answer = await eventually(() => query(key, "sum(streamed)", T0 + 15_000), {
    what: "the hot writer to store the batch",
    timeoutMs: 30_000,
    // Each partition's message is applied on its own: the batch shows up partition by partition.
    accept: (body) => body.data.result[0]?.value[1] === String((12 * 13) / 2),
  });
  assert.deepEqual(answer.data.result[0].value, [(T0 + 15_000) / 1000, "78"]);
});

test("MT-16 on the stream path the hot writer refuses series past the metric's ceiling, counts them and the owner is alerted", async () => {
  // Samples of now: the refusal sample is stamped with the clock, and a head spanning months
  // would compact the older data away mid-test (see the README's "what does not hold").
  const now = Date.now();
  const series = Array.from({ length: 5 }, (_, i) => ({
    labels: labelsFromRecord({ __name__: "exploding", user_id: `u${i}` }),
    samples: [{ t: now, v: 1 }],
  }));
  const res = await write(limitedKey, series);
  assert.equal(res.statusCode, 204, "the stream took the batch: the ceiling applies after the answer");
  await eventually(
    async () => {
      const metrics = await running.service.app.inject({ url: "/metrics" });
      return /^metrics_refused_series_total\{tenant="capped"\} 3$/m.test(metrics.body);
    },
    { what: "3 series refused and counted", timeoutMs: 30_000 },
  );
  const stored = await query(limitedKey, "count(exploding)", now);
  assert.equal(stored.data.result[0].value[1], "2");
  // The refusal travels the stream as a sample; the evaluator (stream only) alerts the tenant's owner.
  const alert = await eventually(
    () => notifications.find((n) => n.groupLabels.alertname === "CardinalityLimitReached"),
    { what: "the cardinality alert", timeoutMs: 60_000 },
  );
  assert.deepEqual(alert.alerts[0]!.labels, {
    alertname: "CardinalityLimitReached",
    audience: "tenant-owner",
    limit: "metric_series_limit",
    metric: "exploding",
    severity: "warning",
    tenant: "capped",
  });
  // The 5 series span several partitions, each its own stream message, so the refusals reach the
  // evaluator one message at a time and the alert fires on the first: its summary counts the
  // refusals seen by then (1 to 3; the exact 3 is the counter's, asserted above).
  const refused = /^exploding: (\d+) new series refused/.exec(alert.alerts[0]!.annotations.summary ?? "");
  assert.ok(
    refused && Number(refused[1]) >= 1 && Number(refused[1]) <= 3,
    alert.alerts[0]!.annotations.summary,
  );
});
