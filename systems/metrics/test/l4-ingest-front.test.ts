/**
 * MT-05's first clause, multi-process: batches pass through an L4 balancer that does not
 * inspect content — a private nginx with Debian's `stream` module, TCP round-robin — in front
 * of two ingest processes (`src/main.ts` with METRICS_CONSUMERS=off), which validate and
 * publish to one private NATS JetStream; a third process (this one, consumers on) runs the
 * hot writer and answers queries. Tenants and keys are in PostgreSQL (a fresh schema), shared
 * by the three. A sender writing batch after batch, each on a new TCP connection, lands on
 * both ingests, and every series arrives whole and in its time order (MT-06: one subject per
 * partition, whichever ingest published). Then one ingest is SIGKILLed: the front passes every
 * later batch to the other at once, and the series stay whole.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { freePort } from "@casebook/lab/free-port";
import { startServerProcess } from "@casebook/lab/server-process";
import { spawnNats } from "@casebook/lab/spawn-nats";
import { spawnNginx } from "@casebook/lab/spawn-nginx";
import { enginesRequired, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { main } from "../src/main.ts";

const STREAM_MODULE_PATH = "/usr/lib/nginx/modules/ngx_stream_module.so";
const ENTRY = new URL("../src/main.ts", import.meta.url);
const T0 = Date.now() - 30 * 60_000;
const SERIES = 24;
const BATCHES = 30;
/** Batches in all: the last ones sent after one of the two ingests is SIGKILLed. */
const TOTAL_BATCHES = 45;

/** One POST on its own TCP connection (no keep-alive), so the L4 front balances every batch. */
function post(url: string, key: string, body: Uint8Array): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/api/v1/write`,
      {
        method: "POST",
        agent: false,
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/x-protobuf",
          "content-encoding": "snappy",
          "content-length": body.length,
          connection: "close",
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

async function streamedBy(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith("metrics_streamed_samples_total{"));
  return line === undefined ? 0 : Number(line.split(" ").at(-1));
}

test("MT-05 MT-06 writes through an L4 front (nginx stream) land on two ingest processes, and on the other when one is SIGKILLed; every series stored whole, in order", async (t) => {
  if (!existsSync(STREAM_MODULE_PATH)) {
    if (enginesRequired) assert.fail(`${STREAM_MODULE_PATH} missing: apt-get install libnginx-mod-stream`);
    return t.skip("nginx's stream module is not installed (libnginx-mod-stream)");
  }
  const databaseUrl = await requirePostgres(t);
  if (!databaseUrl) return;
  const schema = uniqueName("metrics_l4");
  const dir = await mkdtemp(join(tmpdir(), "casebook-metrics-l4-"));
  const nats = await spawnNats();
  const shared = {
    DATABASE_URL: databaseUrl,
    METRICS_DB_SCHEMA: schema,
    NATS_URL: nats.url,
    METRICS_PARTITIONS: "4",
    // The sample stream (default 256 MiB) and the alert log (32 MiB) both reserve their bytes:
    // lab's nats-server holds 256 MiB of file store, so the sample stream takes a quarter.
    METRICS_STREAM_MAX_BYTES: String(64 * 1024 * 1024),
    LOG_LEVEL: "warn",
  };
  const stops: Array<() => Promise<unknown>> = [];
  t.after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  });
  // The consumers (hot writer, evaluator) and the query side: this process; it creates the tenant.
  const writer = await main({
    ...shared,
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: join(dir, "writer"),
    METRICS_BOOTSTRAP_TENANT: "l4",
  });
  stops.push(() => writer.close());
  const key = writer.bootstrap!.apiKey;
  // Two ingest-only processes, started one after the other (the schema's migrations ran above).
  const ingests = [];
  for (const name of ["ingest-1", "ingest-2"]) {
    const ingest = await startServerProcess({
      name,
      entry: ENTRY,
      env: {
        ...shared,
        METRICS_CONSUMERS: "off",
        METRICS_BOOTSTRAP_TENANT: "off",
        CASEBOOK_DATA: join(dir, name),
      },
    });
    stops.push(() => ingest.stop());
    ingests.push(ingest);
  }
  const frontPort = await freePort();
  const front = await spawnNginx({
    main: [
      `load_module ${STREAM_MODULE_PATH};`,
      "stream {",
      `  upstream metrics_ingest { ${ingests.map((i) => `server ${new URL(i.url).host};`).join(" ")} }`,
      `  server { listen 127.0.0.1:${frontPort}; proxy_pass metrics_ingest; proxy_connect_timeout 1s; proxy_next_upstream on; }`,
      "}",
    ].join("\n"),
    http: (port) => `server { listen 127.0.0.1:${port}; location / { return 200 "metrics front\\n"; } }`,
  });
  stops.push(() => front.stop());
  const frontUrl = `http://127.0.0.1:${frontPort}`;

  // Batch k carries sample k of every series: a series' order is the batches' order.
  const batch = (k: number) =>
    snappyCompress(
      encodeWriteRequest(
        Array.from({ length: SERIES }, (_, i) => ({
          labels: labelsFromRecord({ __name__: "mt05_requests_total", path: `/p${i}` }),
          samples: [{ t: T0 + k * 15_000, v: k * 10 + i }],
        })),
      ),
    );
  for (let k = 0; k < BATCHES; k++) assert.equal(await post(frontUrl, key, batch(k)), 204, `batch ${k}`);
  const perIngest = await Promise.all(ingests.map((i) => streamedBy(i.url)));
  assert.ok(
    perIngest.every((n) => n > 0),
    `both ingests took batches through the front: ${perIngest.join(" + ")}`,
  );
  assert.equal(perIngest[0]! + perIngest[1]!, SERIES * BATCHES, "each batch published once");

  // One ingest dies (SIGKILL, between batches): the front's connect to it is refused and nginx
  // passes the connection to the other (proxy_next_upstream), so every later batch is answered
  // 204 at its first try — the sender never sees the dead process.
  await ingests[0]!.kill();
  for (let k = BATCHES; k < TOTAL_BATCHES; k++)
    assert.equal(await post(frontUrl, key, batch(k)), 204, `batch ${k}, after ingest-1's death`);
  assert.equal(
    await streamedBy(ingests[1]!.url),
    perIngest[1]! + SERIES * (TOTAL_BATCHES - BATCHES),
    "the live ingest took every batch after the kill",
  );

  const stored = await eventually(
    async () => {
      const res = await fetch(
        `${writer.url}/api/v1/query?query=${encodeURIComponent("mt05_requests_total[1h]")}&time=${(T0 + TOTAL_BATCHES * 15_000) / 1000}`,
        { headers: { authorization: `Bearer ${key}` } },
      );
      const body = (await res.json()) as {
        data: { result: Array<{ metric: Record<string, string>; values: [number, string][] }> };
      };
      const result = body.data.result;
      return result.length === SERIES && result.every((s) => s.values.length === TOTAL_BATCHES)
        ? result
        : undefined;
    },
    { timeoutMs: 60_000, what: "every sample stored by the hot writer" },
  );
  for (const s of stored) {
    const i = Number(s.metric.path!.slice(2));
    assert.deepEqual(
      s.values.map(([time, v]) => [time * 1_000, Number(v)]),
      Array.from({ length: TOTAL_BATCHES }, (_, k) => [T0 + k * 15_000, k * 10 + i]),
      `${s.metric.path}: whole and in time order`,
    );
  }
  const writerMetrics = await (await fetch(`${writer.url}/metrics`)).text();
  assert.doesNotMatch(
    writerMetrics,
    /metrics_hot_writer_dropped_messages_total\{[^}]*\} [1-9]/,
    "nothing refused",
  );
  t.diagnostic(`front → ingest-1 ${perIngest[0]} samples, ingest-2 ${perIngest[1]} samples`);
});
