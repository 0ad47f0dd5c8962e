/**
 * The stream port: an append-only log of subjects with bounded retention, publish with a
 * dedup id, and durable pull consumers with explicit acks — the semantics of NATS
 * JetStream, which is the real engine (`jetstream-stream.ts`); `in-process-stream.ts` is
 * its embedded twin, and one contract suite runs on both (`test/stream/`). Metrics,
 * chat routing and feed fan-out build on this interface, never on a backend.
 *
 * Delivery is at least once: a consumer acks what it finished; what it does not ack
 * within `ackWaitMs` comes back (its `deliveryCount` grows) until `maxDeliver`. Make the
 * handler idempotent, or key its effect by `seq`.
 *
 * @example
 * const stream = await openStream({ system: "metrics" });
 * await stream.ensureStream({
 *   name: "METRICS", subjects: ["metrics.>"], storage: "file",
 *   maxMessages: 1_000_000, maxBytes: 256 * 1024 * 1024, maxAgeMs: 24 * 3_600_000,
 *   maxMessageBytes: 64 * 1024, duplicateWindowMs: 120_000, discard: "old",
 * });
 * await stream.publish("metrics.cpu.host-1", JSON.stringify(sample), { msgId: sample.id });
 * await stream.ensureConsumer("METRICS", {
 *   name: "rollup", filterSubject: "metrics.cpu.>", deliver: { from: "all" },
 *   ackWaitMs: 30_000, maxDeliver: 5, maxAckPending: 1_000,
 * });
 * for (const message of await stream.fetch("METRICS", "rollup", { maxMessages: 100, expiresMs: 5_000 })) {
 *   await handle(message.json());
 *   await message.ack();
 * }
 */
import { streamErrors } from "./stream-errors.ts";
import { checkFilter } from "./subject.ts";

export interface StreamConfig {
  /** Stream name: letters, digits, `_` and `-` (JetStream refuses `.`, `*`, `>` and spaces). */
  name: string;
  /** Subjects (wildcards allowed) whose messages this stream stores; must not overlap another stream's. */
  subjects: string[];
  /** `file` survives a server restart; `memory` does not. The in-process twin keeps everything in memory. */
  storage: "file" | "memory";
  /** Retention bounds, all explicit: the oldest messages go (or new ones are refused) past any of them. */
  maxMessages: number;
  maxBytes: number;
  maxAgeMs: number;
  /** Largest message (payload + headers) the stream accepts. */
  maxMessageBytes: number;
  /** How long a `msgId` is remembered; a second publish with it inside the window is not stored. */
  duplicateWindowMs: number;
  /** Past a bound: `old` drops the oldest messages, `new` refuses the publish (STREAM_LIMIT_REACHED). */
  discard: "old" | "new";
}

/** Where a new consumer starts reading. Fixed at creation, like JetStream's deliver policy. */
export type DeliverFrom =
  | { from: "all" }
  | { from: "new" }
  | { from: "sequence"; sequence: number }
  | { from: "time"; timeMs: number };

export interface ConsumerConfig {
  /** Durable name: the consumer keeps its position on the server when every client is gone. */
  name: string;
  /** Only messages whose subject matches (wildcards allowed); all of the stream's when omitted. */
  filterSubject?: string;
  deliver: DeliverFrom;
  /** `explicit`: each message waits for ack/nak/term; `none`: delivered once, for replays. Default explicit. */
  ackPolicy?: "explicit" | "none";
  /** An unacked message is redelivered after this long. */
  ackWaitMs: number;
  /** Deliveries of one message before it is given up (no more redeliveries). */
  maxDeliver: number;
  /** Delivered-but-unacked messages at most; past it, fetch waits for acks. */
  maxAckPending: number;
}

/** The mutable part of a consumer: ensureConsumer() updates these on an existing one. */
export const MUTABLE_CONSUMER_FIELDS = ["ackWaitMs", "maxDeliver", "maxAckPending"] as const;

export interface PublishOptions {
  /** Dedup id (JetStream's `Nats-Msg-Id`): a second publish inside the duplicate window is acknowledged, not stored. */
  msgId?: string;
  headers?: Readonly<Record<string, string>>;
  /** Bound on waiting for the server's acknowledgement; default the client's `requestTimeoutMs`. */
  timeoutMs?: number;
}

export interface PublishAck {
  stream: string;
  /** The stream sequence the message holds (the first copy's, for a duplicate). */
  seq: number;
  /** True when `msgId` was seen inside the duplicate window: nothing was stored. */
  duplicate: boolean;
}

export interface StoredMessage {
  stream: string;
  subject: string;
  seq: number;
  data: Uint8Array;
  headers: Readonly<Record<string, string>>;
  /** When the server stored it (ms since the epoch). */
  timeMs: number;
}

export interface StreamMessage extends StoredMessage {
  /** 1 on first delivery, 2 on the first redelivery, … */
  deliveryCount: number;
  /**
   * The consumer's count of deliveries, this one included (JetStream's consumer sequence):
   * +1 for every message it hands out, redeliveries included, whoever fetched it. A client
   * that sees it run on without a gap from its previous fetch has been handed every delivery
   * since — none went to another client, or was lost on the way.
   */
  deliverySeq: number;
  text(): string;
  json<T = unknown>(): T;
  /** Done: never redelivered. Resolves once the server confirmed it. */
  ack(): Promise<void>;
  /** Not done: redeliver after `delayMs` (default at once). */
  nak(delayMs?: number): Promise<void>;
  /** Still working: restart the ack wait. */
  working(): Promise<void>;
  /** Never redeliver (a poison message); it does not count as processed. */
  term(): Promise<void>;
}

export interface FetchOptions {
  /** At most this many messages. */
  maxMessages: number;
  /**
   * Waits at most this long for the FIRST message, then returns what is available at
   * once (up to `maxMessages`); an empty array when nothing came.
   */
  expiresMs: number;
}

export interface StreamState {
  name: string;
  messages: number;
  bytes: number;
  /** 0 when empty, as JetStream reports it. */
  firstSeq: number;
  lastSeq: number;
}

export interface ConsumerState {
  stream: string;
  name: string;
  /** Delivered and not yet acked (or given up). */
  ackPending: number;
  /** Matching messages not yet delivered. */
  pending: number;
}

/** A client of one stream server (JetStream) or of the in-process twin. */
export interface StreamClient {
  readonly backend: "jetstream" | "in-process";
  /** Creates the stream, or updates an existing one's subjects and limits; storage cannot change. */
  ensureStream(config: StreamConfig): Promise<StreamState>;
  streamState(name: string): Promise<StreamState>;
  /** True when it existed. Its consumers go with it. */
  deleteStream(name: string): Promise<boolean>;
  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): Promise<PublishAck>;
  /** One stored message by sequence (a replay needs no consumer), or undefined when gone. */
  getMessage(stream: string, seq: number): Promise<StoredMessage | undefined>;
  /** Creates the durable consumer, or updates its mutable fields; a changed filter/start/ack policy conflicts. */
  ensureConsumer(stream: string, config: ConsumerConfig): Promise<ConsumerState>;
  consumerState(stream: string, name: string): Promise<ConsumerState>;
  deleteConsumer(stream: string, name: string): Promise<boolean>;
  fetch(stream: string, consumer: string, options: FetchOptions): Promise<StreamMessage[]>;
  /**
   * Acks every message (each fetched by this client) and resolves once the server has them all:
   * on JetStream one round trip for the lot — the acks go out in order on the one connection and
   * only the last waits for its confirmation (the server takes a connection's acks in order), where
   * `ack()` each would be a confirmed request per message. Rejects as `ack()` does.
   */
  ackAll(messages: readonly StreamMessage[]): Promise<void>;
  /** Releases the connection; streams and consumers stay on the server. Idempotent. */
  close(): Promise<void>;
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** JetStream's limits are int64; ours stop where a double is still exact. */
const MAX_BOUND = Number.MAX_SAFE_INTEGER;
/** Bound on one fetch: JetStream's default max_request_batch is unlimited, ours is not. */
export const MAX_FETCH_MESSAGES = 10_000;
/** Bound on one fetch's wait: long polls past this hold a server request slot for too long. */
export const MAX_FETCH_EXPIRES_MS = 300_000;

function invalid(setting: string, value: unknown, why: string): never {
  throw streamErrors.create("STREAM_CONFIG_INVALID", {
    detail: `${setting} ${why} (got ${JSON.stringify(value)})`,
    fields: { setting, value },
  });
}

export function checkName(setting: string, name: string): string {
  if (typeof name !== "string" || !NAME.test(name)) invalid(setting, name, "must be 1-64 of A-Z a-z 0-9 _ -");
  return name;
}

function checkPositive(setting: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 1 || value > MAX_BOUND) {
    invalid(setting, value, "must be a positive integer");
  }
}

/** Validates a stream config; throws STREAM_CONFIG_INVALID / STREAM_SUBJECT_INVALID naming the setting. */
export function checkStreamConfig(config: StreamConfig): StreamConfig {
  checkName("name", config.name);
  if (!Array.isArray(config.subjects) || config.subjects.length === 0) {
    invalid("subjects", config.subjects, "must name at least one subject");
  }
  for (const subject of config.subjects) checkFilter(subject);
  if (config.storage !== "file" && config.storage !== "memory")
    invalid("storage", config.storage, "must be file or memory");
  if (config.discard !== "old" && config.discard !== "new")
    invalid("discard", config.discard, "must be old or new");
  for (const key of [
    "maxMessages",
    "maxBytes",
    "maxAgeMs",
    "maxMessageBytes",
    "duplicateWindowMs",
  ] as const) {
    checkPositive(key, config[key]);
  }
  // JetStream refuses a duplicate window longer than the age bound; so does the twin.
  if (config.duplicateWindowMs > config.maxAgeMs) {
    invalid("duplicateWindowMs", config.duplicateWindowMs, "must not exceed maxAgeMs");
  }
  return config;
}

/** Validates a consumer config; throws STREAM_CONFIG_INVALID naming the setting. */
export function checkConsumerConfig(config: ConsumerConfig): ConsumerConfig {
  checkName("consumer name", config.name);
  if (config.filterSubject !== undefined) checkFilter(config.filterSubject);
  const deliver = config.deliver;
  if (deliver?.from === "sequence") checkPositive("deliver.sequence", deliver.sequence);
  else if (deliver?.from === "time") checkPositive("deliver.timeMs", deliver.timeMs);
  else if (deliver?.from !== "all" && deliver?.from !== "new")
    invalid("deliver", deliver, "must be all, new, sequence or time");
  const ackPolicy = config.ackPolicy ?? "explicit";
  if (ackPolicy !== "explicit" && ackPolicy !== "none")
    invalid("ackPolicy", ackPolicy, "must be explicit or none");
  for (const key of MUTABLE_CONSUMER_FIELDS) checkPositive(key, config[key]);
  return config;
}

export function checkFetchOptions(options: FetchOptions): FetchOptions {
  checkPositive("maxMessages", options.maxMessages);
  if (options.maxMessages > MAX_FETCH_MESSAGES)
    invalid("maxMessages", options.maxMessages, `must be <= ${MAX_FETCH_MESSAGES}`);
  checkPositive("expiresMs", options.expiresMs);
  if (options.expiresMs > MAX_FETCH_EXPIRES_MS)
    invalid("expiresMs", options.expiresMs, `must be <= ${MAX_FETCH_EXPIRES_MS}`);
  return options;
}

/** Payloads travel as bytes; strings are UTF-8. */
export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? new TextEncoder().encode(data) : data;
}

/** The immutable part of a consumer, compared by ensureConsumer() on an existing one. */
export function consumerIdentity(config: ConsumerConfig): string {
  return JSON.stringify([config.filterSubject ?? "", config.deliver, config.ackPolicy ?? "explicit"]);
}
