/**
 * How many partitions the sample stream has (MT-06), kept with the stream — as a Kafka topic
 * keeps its partition count — because it cannot change under a running stream: a series hashed
 * to another partition would have its newer samples applied before the older ones still queued
 * on its old partition (the TSDB refuses those as out of order), and consumers made for the new
 * count would never read the old partitions' backlog.
 *
 * The count is the first message of a one-subject stream of its own (`METRICS_LAYOUT`), written
 * by whichever process starts first; every process — ingest-only ones behind an L4 front too —
 * reads that same message, so concurrent first starts with different settings still agree (the
 * first stored wins; a second publish inside the duplicate window is dropped by its id).
 *
 * - No layout yet: the count set (`METRICS_PARTITIONS`), else 16 when the sample stream already
 *   holds messages (what every version before this one used: an upgrade keeps reading its
 *   stream as written), else `DEFAULT_PARTITIONS` for a new stream.
 * - A layout: its count; a different `METRICS_PARTITIONS` is refused at the start, naming both —
 *   the way out is to let the consumers drain the stream and start on a new one.
 *
 * @example
 * const partitions = await streamPartitions(client, { configured: config.partitions });
 * const samples = new SampleStream(client, { partitions, retentionMs });
 */
import type { StreamClient, StreamConfig } from "@casebook/infra/stream/stream";
import { streamErrors } from "@casebook/infra/stream/stream-errors";
import { MAX_PARTITIONS } from "../domain/series-partition.ts";
import { errors } from "../errors.ts";
import { SAMPLE_STREAM } from "./sample-stream.ts";

export const LAYOUT_STREAM = "METRICS_LAYOUT";
export const LAYOUT_SUBJECT = "metrics.layout";
/**
 * A new stream's partitions. Each one is a message per accepted request and a consumer of the
 * hot writer's: on one 2-core process, 4 cost ~10–25% less CPU per sample than 16 (the bench's
 * steady row) and still show series spread over partitions; raise it to spread the consumers.
 */
export const DEFAULT_PARTITIONS = 4;
/** What the stream had before its layout was kept: the default of every earlier version. */
export const UNRECORDED_PARTITIONS = 16;
/** The layout's own stream: a message or so, kept ten years. */
export const LAYOUT_STREAM_CONFIG: Readonly<StreamConfig> = {
  name: LAYOUT_STREAM,
  subjects: [LAYOUT_SUBJECT],
  storage: "file",
  maxMessages: 1_000,
  maxBytes: 1024 * 1024,
  maxAgeMs: 10 * 365 * 86_400_000,
  maxMessageBytes: 1_024,
  duplicateWindowMs: 120_000,
  discard: "new",
};

interface Layout {
  readonly partitions: number;
}

function isLayout(value: unknown): value is Layout {
  const partitions = (value as { partitions?: unknown } | null)?.partitions;
  // METRICS_PARTITIONS's bounds: a hand-written layout must not ask for a million consumers.
  return (
    typeof partitions === "number" &&
    Number.isSafeInteger(partitions) &&
    partitions >= 1 &&
    partitions <= MAX_PARTITIONS
  );
}

/** The message as JSON, or its text when it is not JSON (then named in the refusal). */
function parsedOrText(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

async function holdsMessages(client: StreamClient, stream: string): Promise<boolean> {
  try {
    return (await client.streamState(stream)).messages > 0;
  } catch (error) {
    if (streamErrors.is(error, "STREAM_NOT_FOUND")) return false;
    throw error;
  }
}

/** The stream's partition count: recorded, or recorded now (see the module comment). */
export async function streamPartitions(
  client: StreamClient,
  options: { readonly configured: number | undefined },
): Promise<number> {
  let state = await client.ensureStream(LAYOUT_STREAM_CONFIG);
  if (state.messages === 0) {
    const partitions =
      options.configured ??
      ((await holdsMessages(client, SAMPLE_STREAM)) ? UNRECORDED_PARTITIONS : DEFAULT_PARTITIONS);
    await client.publish(LAYOUT_SUBJECT, JSON.stringify({ partitions } satisfies Layout), {
      msgId: "layout",
    });
    // Ours, or a concurrent start's that came first (ours then dropped as its duplicate).
    state = await client.streamState(LAYOUT_STREAM);
  }
  const first = await client.getMessage(LAYOUT_STREAM, state.firstSeq);
  const layout = first === undefined ? undefined : parsedOrText(new TextDecoder().decode(first.data));
  if (!isLayout(layout))
    throw errors.create("METRICS_CONFIG_INVALID", {
      detail: `The stream's layout (${LAYOUT_STREAM}, its first message) is not one: ${JSON.stringify(layout)}.`,
      fields: { field: "METRICS_PARTITIONS" },
    });
  if (options.configured !== undefined && options.configured !== layout.partitions)
    throw errors.create("METRICS_CONFIG_INVALID", {
      detail:
        `METRICS_PARTITIONS=${options.configured}, but the sample stream was created with ${layout.partitions} ` +
        "partitions, and the count cannot change under it (a series moved to another partition would " +
        `overtake its own queued samples). Unset METRICS_PARTITIONS, or set it to ${layout.partitions}; for another ` +
        `count, let the consumers drain the stream and start on a new one (delete ${SAMPLE_STREAM} and ${LAYOUT_STREAM}).`,
      fields: { field: "METRICS_PARTITIONS", value: options.configured, recorded: layout.partitions },
    });
  return layout.partitions;
}
