/**
 * The ingest bench's floor: the least a Node service with the stream hop can be. It
 * takes remote-write requests over node:http and publishes each body, as it arrived (snappy
 * protobuf), as ONE message on JetStream file storage through the same stream client ours uses,
 * answering 204 after the stream's ack; three durable consumers — as ours has (hot writer, rollup
 * builder, alert evaluator) — fetch every message and ack it (two in batches, one with no acks,
 * as ours). No decoding (unless `FLOOR_DECODE` asks, below), no validation, no partitions, no
 * dedup id, no storage. Whatever a design on this stream does with the samples comes on top of
 * what this costs, so its samples per CPU-second (this process + its nats-server) are a ceiling
 * for such designs on this machine (one that kept less on the stream, or read it fewer times,
 * could pass it: not what the issue asks for). Its own process, started by the bench (PORT, HOST,
 * NATS_URL; `/readyz` for the readiness poll); `/metrics` says what was published, decoded, and
 * read by each consumer.
 *
 * @example
 * // NATS_URL=nats://127.0.0.1:4222 PORT=8429 node systems/metrics/bench/stream-floor.ts
 */
import { createServer } from "node:http";
import { openStream } from "@casebook/infra/stream/open-stream";
import { decodeWriteRequestColumns } from "../src/domain/remote-write.ts";
import { snappyUncompress } from "../src/domain/snappy.ts";

const STREAM = "METRICS_FLOOR";
const SUBJECT = "floor.samples";
/** Ours: the rollup builder's batch (256) and the alert evaluator's (1,000, no acks). */
const CONSUMERS = [
  { name: "floor-hot", ackPolicy: "explicit", batch: 256 },
  { name: "floor-rollup", ackPolicy: "explicit", batch: 256 },
  { name: "floor-alerts", ackPolicy: "none", batch: 1_000 },
] as const;
const MAX_BODY_BYTES = 32 * 1024 * 1024;
/**
 * `FLOOR_DECODE` (the bench's `--floor-decode`): "none", the hop alone; "ingest", each body also
 * decoded as it arrives (snappy, then the protobuf into columns, as ours' ingest reads it; nothing
 * kept); "every-reader", decoded there and by each consumer for each message it reads.
 */
const DECODE = process.env.FLOOR_DECODE ?? "none";
const LIMITS = { maxSeries: 1_000_000, maxSamples: 10_000_000 };
let decodedSamples = 0;
const decode = (body: Uint8Array) => {
  decodedSamples += decodeWriteRequestColumns(snappyUncompress(body, MAX_BODY_BYTES), LIMITS).timestamps
    .length;
};

const client = await openStream({ system: "metrics" });
await client.ensureStream({
  name: STREAM,
  subjects: [SUBJECT],
  storage: "file",
  maxMessages: 10_000_000,
  maxBytes: 1024 ** 3,
  maxAgeMs: 3_600_000,
  maxMessageBytes: 960 * 1024,
  duplicateWindowMs: 120_000,
  discard: "old",
});
let published = 0;
const consumed = new Map<string, number>();
let stopping = false;
await Promise.all(
  CONSUMERS.map(async ({ name, ackPolicy, batch }) => {
    await client.ensureConsumer(STREAM, {
      name,
      deliver: { from: "all" },
      ackPolicy,
      ackWaitMs: 30_000,
      maxDeliver: 1_000,
      maxAckPending: ackPolicy === "none" ? 10_000 : batch,
    });
    consumed.set(name, 0);
  }),
);
const read = async (name: string, ackPolicy: "explicit" | "none", batch: number) => {
  while (!stopping) {
    const messages = await client.fetch(STREAM, name, { maxMessages: batch, expiresMs: 500 });
    if (DECODE === "every-reader") for (const m of messages) decode(m.data);
    if (ackPolicy === "explicit") await client.ackAll(messages);
    consumed.set(name, consumed.get(name)! + messages.length);
  }
};
const loops = CONSUMERS.map(({ name, ackPolicy, batch }) => read(name, ackPolicy, batch));

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url === "/readyz") return void res.writeHead(200).end("ok");
  if (req.method === "GET" && req.url === "/metrics") {
    const lines = [`floor_published_messages ${published}`, `floor_decoded_samples ${decodedSamples}`];
    for (const [name, n] of consumed) lines.push(`floor_consumed_messages{consumer="${name}"} ${n}`);
    return void res.writeHead(200, { "content-type": "text/plain" }).end(`${lines.join("\n")}\n`);
  }
  if (req.method !== "POST" || req.url !== "/api/v1/write") return void res.writeHead(404).end();
  const chunks: Buffer[] = [];
  let bytes = 0;
  req.on("data", (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes <= MAX_BODY_BYTES) chunks.push(chunk);
  });
  req.on("end", () => {
    if (bytes > MAX_BODY_BYTES || bytes === 0) return void res.writeHead(400).end();
    const body = Buffer.concat(chunks, bytes);
    if (DECODE !== "none") decode(body);
    client.publish(SUBJECT, body).then(
      () => {
        published++;
        res.writeHead(204).end();
      },
      () => res.writeHead(503).end(),
    );
  });
});
server.listen(Number(process.env.PORT ?? 8429), process.env.HOST ?? "127.0.0.1");

process.once("SIGTERM", () => {
  stopping = true;
  server.close();
  void Promise.allSettled(loops).then(() => client.close());
});
