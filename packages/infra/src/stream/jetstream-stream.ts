/**
 * The stream port on NATS JetStream, through the supported split client
 * (`@nats-io/transport-node` + `@nats-io/jetstream`). Every wait is bounded: the connect,
 * each API request and publish, each fetch, each ack; publishes in flight are capped.
 * Client errors become `streamErrors` codes, so callers branch on one registry.
 *
 * Fetch is built from raw pull requests (see `fetch`), so it answers as soon as its first
 * message is there — the semantics the in-process twin implements. (The client's
 * `consumer.fetch()` waits for the whole batch and refuses an expiry under 1 s.)
 *
 * @example
 * const stream = await openJetStream({ url: "nats://127.0.0.1:4222", name: "metrics" });
 * const ack = await stream.publish("metrics.cpu", "0.93", { msgId: "sample-1" });
 */
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type ConsumerConfig as JsConsumerConfig,
  type ConsumerInfo as JsConsumerInfo,
  type StreamConfig as JsStreamConfig,
  type StreamInfo as JsStreamInfo,
  jetstream,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import {
  connect,
  createInbox,
  errors,
  type Msg,
  type NatsConnection,
  nanos,
  headers as natsHeaders,
} from "@nats-io/transport-node";
import {
  type ConsumerConfig,
  type ConsumerState,
  checkConsumerConfig,
  checkFetchOptions,
  checkName,
  checkStreamConfig,
  consumerIdentity,
  type DeliverFrom,
  type FetchOptions,
  type PublishAck,
  type PublishOptions,
  type StoredMessage,
  type StreamClient,
  type StreamConfig,
  type StreamMessage,
  type StreamState,
  toBytes,
} from "./stream.ts";
import { type StreamErrorCode, streamErrors } from "./stream-errors.ts";
import { checkSubject } from "./subject.ts";

export interface JetStreamOptions {
  /** `nats://host:4222`, or several, comma-separated. */
  url: string;
  /** Connection name, shown in the server's monitoring (`casebook-<system>`). */
  name?: string;
  /** Bound on opening the connection. Default 2 000 ms. */
  connectTimeoutMs?: number;
  /** Bound on each API request, publish acknowledgement and confirmed ack. Default 5 000 ms. */
  requestTimeoutMs?: number;
  /** Publishes awaiting their acknowledgement at most; past it publish throws STREAM_BACKPRESSURE. Default 1 024. */
  maxPendingPublishes?: number;
  /** Reconnect attempts after a lost connection before the client gives up (closes). Default 600. */
  maxReconnectAttempts?: number;
  /** Pause between reconnect attempts. Default 500 ms (with the defaults: 5 minutes of retrying). */
  reconnectWaitMs?: number;
  /** Ping interval; a server that misses `maxPingsOut` pings in a row is treated as gone. Default 10 000 ms. */
  pingIntervalMs?: number;
  /** Default 2. */
  maxPingsOut?: number;
}

const DEFAULTS = {
  connectTimeoutMs: 2_000,
  requestTimeoutMs: 5_000,
  maxPendingPublishes: 1_024,
  maxReconnectAttempts: 600,
  reconnectWaitMs: 500,
  pingIntervalMs: 10_000,
  maxPingsOut: 2,
} as const;

/** The client's "no responders" on a publish subject (its JetStreamNotEnabled, not exported by name). */
function isNotEnabled(error: unknown): boolean {
  return error instanceof Error && error.name === "JetStreamNotEnabled";
}

/** JetStream API error codes we branch on (nats-server `server/errors.json`). */
const API_CODES = {
  streamNotFound: 10059,
  consumerNotFound: 10014,
  subjectsOverlap: 10065,
  messageTooLarge: 10054,
  maxMessagesExceeded: 10077,
  maxBytesExceeded: 10078,
} as const;

const API_PREFIX = "$JS.API";

/**
 * How long a "take what is there now" pull may wait: it ends at once when messages are there,
 * and only waits this out when nothing is, or when `maxAckPending` holds it.
 */
export const NOW_LINGER_MS = 50;

/**
 * How long past a pull's own `expires` the client waits for the server to end it. The server
 * always ends a pull (messages, then a 404/408 status); ending it on the client at exactly
 * `expires` raced that answer: when the event loop was busy past the deadline (a synchronous
 * DuckDB call, a large decode), libuv ran the timer before reading the socket, the inbox was
 * unsubscribed, and a message the server had just delivered went to nobody — its consumer
 * stalled for the whole ack wait (30 s in metrics' hot writer, seen by its bench under load).
 */
export const PULL_ANSWER_GRACE_MS = 1_000;

/** A JetStream pull request (`$JS.API.CONSUMER.MSG.NEXT`); `expires` in nanoseconds. */
interface PullRequest {
  batch: number;
  no_wait?: boolean;
  expires?: number;
}

/** Checks NATS_URL's shape (nats:// or tls://, comma-separated list); names the variable, never its value. */
export function checkNatsUrl(url: string): string {
  const parts = url.split(",").map((part) => part.trim());
  for (const part of parts) {
    let protocol = "";
    try {
      protocol = new URL(part).protocol;
    } catch {
      protocol = "";
    }
    if (protocol !== "nats:" && protocol !== "tls:") {
      throw streamErrors.create("STREAM_URL_INVALID", { fields: { variable: "NATS_URL" } });
    }
  }
  return parts.join(",");
}

function wrap(code: StreamErrorCode, error: unknown, fields: Record<string, unknown>, detail?: string) {
  return streamErrors.create(code, { cause: error, fields, ...(detail ? { detail } : {}) });
}

/** Maps a client error to the registry; `context` says what was being done (in fields). */
export function toStreamError(error: unknown, context: Record<string, unknown>): Error {
  if (streamErrors.is(error)) return error;
  if (error instanceof errors.TimeoutError) return wrap("STREAM_TIMEOUT", error, context);
  if (error instanceof errors.ClosedConnectionError || error instanceof errors.DrainingConnectionError) {
    return wrap("STREAM_CLOSED", error, context);
  }
  if (error instanceof errors.ConnectionError) return wrap("STREAM_UNAVAILABLE", error, context);
  if (error instanceof errors.RequestError && error.isNoResponders()) {
    return wrap("STREAM_UNAVAILABLE", error, context, "no JetStream answered the request");
  }
  if (error instanceof JetStreamApiError) {
    const api = error.apiError();
    const fields = { ...context, apiCode: api.err_code, description: api.description };
    switch (api.err_code) {
      case API_CODES.streamNotFound:
        return wrap("STREAM_NOT_FOUND", error, fields);
      case API_CODES.consumerNotFound:
        return wrap("STREAM_CONSUMER_NOT_FOUND", error, fields);
      case API_CODES.subjectsOverlap:
        return wrap("STREAM_CONFIG_CONFLICT", error, fields, api.description);
      case API_CODES.messageTooLarge:
        return wrap("STREAM_MESSAGE_TOO_LARGE", error, fields);
      case API_CODES.maxMessagesExceeded:
      case API_CODES.maxBytesExceeded:
        return wrap("STREAM_LIMIT_REACHED", error, fields);
      default:
        return wrap("STREAM_REQUEST_FAILED", error, fields, `JetStream refused: ${api.description}`);
    }
  }
  return wrap(
    "STREAM_REQUEST_FAILED",
    error,
    context,
    error instanceof Error ? error.message : String(error),
  );
}

function toJsStreamConfig(config: StreamConfig): Partial<JsStreamConfig> & { name: string } {
  return {
    name: config.name,
    subjects: [...config.subjects],
    storage: config.storage === "file" ? StorageType.File : StorageType.Memory,
    retention: RetentionPolicy.Limits,
    max_msgs: config.maxMessages,
    max_bytes: config.maxBytes,
    max_age: nanos(config.maxAgeMs),
    max_msg_size: config.maxMessageBytes,
    duplicate_window: nanos(config.duplicateWindowMs),
    discard: config.discard === "old" ? DiscardPolicy.Old : DiscardPolicy.New,
    num_replicas: 1,
  };
}

function stateOf(info: JsStreamInfo): StreamState {
  const { state } = info;
  return {
    name: info.config.name,
    messages: state.messages,
    bytes: state.bytes,
    firstSeq: state.first_seq,
    lastSeq: state.last_seq,
  };
}

function consumerStateOf(info: JsConsumerInfo): ConsumerState {
  return {
    stream: info.stream_name,
    name: info.name,
    ackPending: info.num_ack_pending,
    pending: info.num_pending,
  };
}

function deliverOf(config: ConsumerConfig): Partial<JsConsumerConfig> {
  const deliver = config.deliver;
  if (deliver.from === "new") return { deliver_policy: DeliverPolicy.New };
  if (deliver.from === "sequence")
    return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: deliver.sequence };
  if (deliver.from === "time") {
    return {
      deliver_policy: DeliverPolicy.StartTime,
      opt_start_time: new Date(deliver.timeMs).toISOString(),
    };
  }
  return { deliver_policy: DeliverPolicy.All };
}

/** Reads an existing consumer's immutable settings back into our vocabulary, to compare. */
function identityOf(config: JsConsumerConfig): string {
  let deliver: DeliverFrom = { from: "all" };
  if (config.deliver_policy === DeliverPolicy.New) deliver = { from: "new" };
  else if (config.deliver_policy === DeliverPolicy.StartSequence) {
    deliver = { from: "sequence", sequence: config.opt_start_seq ?? 0 };
  } else if (config.deliver_policy === DeliverPolicy.StartTime) {
    deliver = { from: "time", timeMs: Date.parse(config.opt_start_time ?? "") };
  }
  const filterSubject = config.filter_subject || undefined;
  return consumerIdentity({
    name: "",
    deliver,
    ...(filterSubject ? { filterSubject } : {}),
    ackPolicy: config.ack_policy === AckPolicy.None ? "none" : "explicit",
    ackWaitMs: 1,
    maxDeliver: 1,
    maxAckPending: 1,
  });
}

function headersOf(msg: { headers?: Iterable<[string, string[]]> | undefined }): Record<string, string> {
  const out: Record<string, string> = {};
  if (!msg.headers) return out;
  for (const [key, values] of msg.headers) out[key] = values[0] ?? "";
  return out;
}

/**
 * The ack subject carries the delivery: `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ns>.<pending>`
 * (9 tokens), or, from servers 2.10 on, with a domain and account hash after `ACK` (12+ tokens).
 */
export function parseAckSubject(
  reply: string,
): { deliveryCount: number; seq: number; deliverySeq: number; timeMs: number } | undefined {
  const tokens = reply.split(".");
  if (tokens[0] !== "$JS" || tokens[1] !== "ACK") return undefined;
  const at = tokens.length === 9 ? 2 : tokens.length >= 12 ? 4 : -1;
  if (at < 0) return undefined;
  const deliveryCount = Number(tokens[at + 2]);
  const seq = Number(tokens[at + 3]);
  const deliverySeq = Number(tokens[at + 4]);
  const ns = tokens[at + 5] ?? "";
  if (
    !Number.isSafeInteger(deliveryCount) ||
    !Number.isSafeInteger(seq) ||
    !Number.isSafeInteger(deliverySeq) ||
    !/^\d+$/.test(ns)
  )
    return undefined;
  return { deliveryCount, seq, deliverySeq, timeMs: Number(BigInt(ns) / 1_000_000n) };
}

class JetStreamStream implements StreamClient {
  readonly backend = "jetstream" as const;
  readonly #nc: NatsConnection;
  readonly #jsm: JetStreamManager;
  readonly #js: JetStreamClient;
  readonly #requestTimeoutMs: number;
  readonly #maxPendingPublishes: number;
  #pendingPublishes = 0;
  /** The ack subject of each message this client fetched (for ackAll), gone with the message. */
  readonly #replies = new WeakMap<StreamMessage, string>();
  /** `stream.consumer` names this client has seen exist; bounded by the consumers it uses. */
  readonly #knownConsumers = new Set<string>();

  constructor(nc: NatsConnection, jsm: JetStreamManager, options: Required<Omit<JetStreamOptions, "name">>) {
    this.#nc = nc;
    this.#jsm = jsm;
    this.#js = jetstream(nc, { timeout: options.requestTimeoutMs });
    this.#requestTimeoutMs = options.requestTimeoutMs;
    this.#maxPendingPublishes = options.maxPendingPublishes;
  }

  async #call<T>(context: Record<string, unknown>, run: () => Promise<T>): Promise<T> {
    if (this.#nc.isClosed()) throw streamErrors.create("STREAM_CLOSED", { fields: context });
    try {
      return await run();
    } catch (error) {
      throw toStreamError(error, context);
    }
  }

  async ensureStream(config: StreamConfig): Promise<StreamState> {
    checkStreamConfig(config);
    const context = { op: "ensureStream", stream: config.name };
    return this.#call(context, async () => {
      const wanted = toJsStreamConfig(config);
      const existing = await this.#streamInfo(config.name);
      if (!existing) return stateOf(await this.#jsm.streams.add(wanted));
      if (existing.config.storage !== wanted.storage) {
        throw streamErrors.create("STREAM_CONFIG_CONFLICT", {
          detail: `stream ${config.name} exists with storage ${existing.config.storage}`,
          fields: { ...context, setting: "storage" },
        });
      }
      const { storage: _storage, retention: _retention, ...changeable } = wanted;
      return stateOf(await this.#jsm.streams.update(config.name, changeable));
    });
  }

  async #streamInfo(name: string): Promise<JsStreamInfo | undefined> {
    try {
      return await this.#jsm.streams.info(name);
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === API_CODES.streamNotFound) return undefined;
      throw error;
    }
  }

  async streamState(name: string): Promise<StreamState> {
    checkName("stream", name);
    return this.#call({ op: "streamState", stream: name }, async () =>
      stateOf(await this.#jsm.streams.info(name)),
    );
  }

  async deleteStream(name: string): Promise<boolean> {
    checkName("stream", name);
    return this.#call({ op: "deleteStream", stream: name }, async () => {
      for (const key of this.#knownConsumers)
        if (key.startsWith(`${name}.`)) this.#knownConsumers.delete(key);
      try {
        return await this.#jsm.streams.delete(name);
      } catch (error) {
        if (error instanceof JetStreamApiError && error.code === API_CODES.streamNotFound) return false;
        throw error;
      }
    });
  }

  async publish(
    subject: string,
    data: Uint8Array | string,
    options: PublishOptions = {},
  ): Promise<PublishAck> {
    checkSubject(subject);
    const context = { op: "publish", subject };
    if (this.#pendingPublishes >= this.#maxPendingPublishes) {
      throw streamErrors.create("STREAM_BACKPRESSURE", {
        fields: { ...context, maxPendingPublishes: this.#maxPendingPublishes },
      });
    }
    this.#pendingPublishes++;
    try {
      return await this.#call(context, async () => {
        const headers = natsHeaders();
        for (const [key, value] of Object.entries(options.headers ?? {})) headers.set(key, value);
        try {
          const ack = await this.#js.publish(subject, toBytes(data), {
            ...(options.msgId === undefined ? {} : { msgID: options.msgId }),
            headers,
            timeout: options.timeoutMs ?? this.#requestTimeoutMs,
            // One attempt: a retry belongs to the caller, who knows whether it has a msgId.
            retries: 1,
          });
          return { stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate };
        } catch (error) {
          // The client names "no responders on the subject" as JetStream being disabled.
          if (isNotEnabled(error)) {
            throw streamErrors.create("STREAM_NOT_FOUND", {
              detail: `no stream captures subject ${subject}`,
              fields: context,
              cause: error,
            });
          }
          throw error;
        }
      });
    } finally {
      this.#pendingPublishes--;
    }
  }

  async getMessage(stream: string, seq: number): Promise<StoredMessage | undefined> {
    checkName("stream", stream);
    return this.#call({ op: "getMessage", stream, seq }, async () => {
      let stored: Awaited<ReturnType<JetStreamManager["streams"]["getMessage"]>>;
      try {
        stored = await this.#jsm.streams.getMessage(stream, { seq });
      } catch (error) {
        // 10037: no message at that sequence (removed by retention, or never written).
        if (error instanceof JetStreamApiError && error.code === 10037) return undefined;
        throw error;
      }
      if (!stored) return undefined;
      return {
        stream,
        subject: stored.subject,
        seq: stored.seq,
        data: stored.data,
        headers: headersOf({ headers: stored.header }),
        timeMs: stored.time.getTime(),
      };
    });
  }

  async ensureConsumer(stream: string, config: ConsumerConfig): Promise<ConsumerState> {
    checkName("stream", stream);
    checkConsumerConfig(config);
    const context = { op: "ensureConsumer", stream, consumer: config.name };
    return this.#call(context, async () => {
      const existing = await this.#consumerInfo(stream, config.name);
      const mutable = {
        ack_wait: nanos(config.ackWaitMs),
        max_deliver: config.maxDeliver,
        max_ack_pending: config.maxAckPending,
      };
      if (!existing) {
        const info = await this.#jsm.consumers.add(stream, {
          durable_name: config.name,
          ack_policy: (config.ackPolicy ?? "explicit") === "explicit" ? AckPolicy.Explicit : AckPolicy.None,
          ...deliverOf(config),
          ...(config.filterSubject === undefined ? {} : { filter_subject: config.filterSubject }),
          ...mutable,
        });
        return consumerStateOf(info);
      }
      if (identityOf(existing.config) !== consumerIdentity(config)) {
        throw streamErrors.create("STREAM_CONFIG_CONFLICT", {
          detail: `consumer ${config.name} exists with another filter, start or ack policy`,
          fields: context,
        });
      }
      return consumerStateOf(await this.#jsm.consumers.update(stream, config.name, mutable));
    });
  }

  async #consumerInfo(stream: string, name: string): Promise<JsConsumerInfo | undefined> {
    try {
      return await this.#jsm.consumers.info(stream, name);
    } catch (error) {
      if (error instanceof JetStreamApiError && error.code === API_CODES.consumerNotFound) return undefined;
      throw error;
    }
  }

  async consumerState(stream: string, name: string): Promise<ConsumerState> {
    checkName("stream", stream);
    checkName("consumer name", name);
    return this.#call({ op: "consumerState", stream, consumer: name }, async () => {
      const state = consumerStateOf(await this.#jsm.consumers.info(stream, name));
      this.#knownConsumers.add(`${stream}.${name}`);
      return state;
    });
  }

  async deleteConsumer(stream: string, name: string): Promise<boolean> {
    checkName("stream", stream);
    checkName("consumer name", name);
    return this.#call({ op: "deleteConsumer", stream, consumer: name }, async () => {
      this.#knownConsumers.delete(`${stream}.${name}`);
      try {
        return await this.#jsm.consumers.delete(stream, name);
      } catch (error) {
        if (error instanceof JetStreamApiError && error.code === API_CODES.consumerNotFound) return false;
        throw error;
      }
    });
  }

  /**
   * Three pull requests at most, so a fetch answers as soon as its first message is there:
   * take what is available now; if nothing, wait up to `expiresMs` for ONE message (a batch
   * of 1 ends the moment it is filled); then take what else is available now. Server 2.9 holds
   * a pull until its batch is full or it expires — even with `no_wait` when `maxAckPending`
   * is reached — so the "now" pulls carry a short `expires` (`NOW_LINGER_MS`), and every pull
   * is awaited to its end: an abandoned pull would take messages nobody reads (redelivered
   * only after `ackWaitMs`).
   */
  async fetch(stream: string, consumer: string, options: FetchOptions): Promise<StreamMessage[]> {
    checkName("stream", stream);
    checkName("consumer name", consumer);
    checkFetchOptions(options);
    const key = `${stream}.${consumer}`;
    // The server does not answer a pull on a missing consumer at all: check a name once, not every pull.
    if (!this.#knownConsumers.has(key)) await this.consumerState(stream, consumer);
    const started = performance.now();
    const max = options.maxMessages;
    const lingerMs = Math.min(NOW_LINGER_MS, options.expiresMs);
    const now = await this.#pullOnce(
      stream,
      consumer,
      { batch: max, no_wait: true, expires: nanos(lingerMs) },
      lingerMs,
    );
    if (now.length > 0 || this.#nc.isClosed()) return now;
    const leftMs = Math.floor(options.expiresMs - (performance.now() - started));
    if (leftMs < 1) return [];
    const first = await this.#pullOnce(stream, consumer, { batch: 1, expires: nanos(leftMs) }, leftMs);
    if (first.length === 0 || max === 1 || this.#nc.isClosed()) return first;
    const rest = await this.#pullOnce(
      stream,
      consumer,
      { batch: max - 1, no_wait: true, expires: nanos(NOW_LINGER_MS) },
      NOW_LINGER_MS,
    );
    return [...first, ...rest];
  }

  /** One pull, its failures typed: an unanswered pull means a vanished consumer or a stalled server. */
  async #pullOnce(
    stream: string,
    consumer: string,
    request: PullRequest,
    waitMs: number,
  ): Promise<StreamMessage[]> {
    const context = { op: "fetch", stream, consumer };
    const outcome = await this.#call(context, () => this.#pull(stream, consumer, request, waitMs));
    if (outcome === "no-responders") {
      throw streamErrors.create("STREAM_UNAVAILABLE", {
        detail: "no JetStream answered the pull request",
        fields: context,
      });
    }
    if (outcome === "unanswered") {
      this.#knownConsumers.delete(`${stream}.${consumer}`);
      await this.consumerState(stream, consumer); // STREAM_CONSUMER_NOT_FOUND, or STREAM_TIMEOUT on a stalled server
      return [];
    }
    return outcome;
  }

  /** Sends one pull request and collects its messages until a status ends it, the batch fills, or `waitMs`. */
  #pull(
    stream: string,
    consumer: string,
    request: PullRequest,
    waitMs: number,
  ): Promise<StreamMessage[] | "no-responders" | "unanswered"> {
    const inbox = createInbox();
    const taken: StreamMessage[] = [];
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (outcome: StreamMessage[] | "no-responders" | "unanswered" | Error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        sub.unsubscribe();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const sub = this.#nc.subscribe(inbox, {
        max: request.batch + 1, // the batch, and the status that ends it
        callback: (error, msg) => {
          if (error) return finish(error);
          const status = msg.headers?.code ?? 0;
          if (status === 503) return finish(taken.length > 0 ? taken : "no-responders");
          // 404 no messages, 408 request expired, 409 consumer deleted / limits: the pull is over.
          if (status !== 0 || !msg.reply) return finish(taken);
          const message = this.#message(stream, consumer, msg);
          if (message) taken.push(message);
          if (taken.length >= request.batch) finish(taken);
        },
      });
      // close() ends the subscription: a waiting fetch returns what it has, as on the twin.
      sub.closed.then(
        () => finish(taken),
        () => finish(taken),
      );
      // The server ends the pull itself; this bound covers a server that stopped answering.
      const timer = setTimeout(
        () => finish(taken.length > 0 ? taken : "unanswered"),
        waitMs + PULL_ANSWER_GRACE_MS,
      );
      try {
        this.#nc.publish(`${API_PREFIX}.CONSUMER.MSG.NEXT.${stream}.${consumer}`, JSON.stringify(request), {
          reply: inbox,
        });
      } catch (error) {
        finish(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  #message(stream: string, consumer: string, msg: Msg): StreamMessage | undefined {
    const reply = msg.reply as string;
    const delivery = parseAckSubject(reply);
    if (!delivery) return undefined;
    const data = msg.data;
    const context = { op: "ack", stream, consumer, seq: delivery.seq };
    // Confirmed acks (a request, not a publish): "nothing acked is lost" needs the server's yes.
    const confirm = (body: string) =>
      this.#call(context, async () => {
        await this.#nc.request(reply, body, { timeout: this.#requestTimeoutMs });
      });
    const message: StreamMessage = {
      stream,
      subject: msg.subject,
      seq: delivery.seq,
      data,
      headers: headersOf(msg),
      timeMs: delivery.timeMs,
      deliveryCount: delivery.deliveryCount,
      deliverySeq: delivery.deliverySeq,
      text: () => new TextDecoder().decode(data),
      json: <T>() => JSON.parse(new TextDecoder().decode(data)) as T,
      ack: () => confirm("+ACK"),
      nak: (delayMs = 0) =>
        confirm(delayMs > 0 ? `-NAK ${JSON.stringify({ delay: nanos(delayMs) })}` : "-NAK"),
      working: () => confirm("+WPI"),
      term: () => confirm("+TERM"),
    };
    this.#replies.set(message, reply);
    return message;
  }

  async ackAll(messages: readonly StreamMessage[]): Promise<void> {
    const last = messages.at(-1);
    if (last === undefined) return;
    const replies = messages.map((message) => {
      const reply = this.#replies.get(message);
      if (reply === undefined)
        throw streamErrors.create("STREAM_CONFIG_INVALID", {
          detail: `message ${message.seq} was not fetched by this client`,
          fields: { setting: "messages", value: message.seq },
        });
      return reply;
    });
    const context = { op: "ackAll", stream: last.stream, seq: last.seq, messages: messages.length };
    await this.#call(context, async () => {
      for (const reply of replies.slice(0, -1)) this.#nc.publish(reply, "+ACK");
      await this.#nc.request(replies.at(-1)!, "+ACK", { timeout: this.#requestTimeoutMs });
    });
  }

  async close(): Promise<void> {
    if (this.#nc.isClosed()) return;
    await this.#nc.close();
  }
}

/** Connects to JetStream and checks it is enabled; STREAM_UNAVAILABLE when it cannot within the bounds. */
export async function openJetStream(options: JetStreamOptions): Promise<StreamClient> {
  const servers = checkNatsUrl(options.url);
  const settings = { ...DEFAULTS, ...definedOnly(options), url: servers };
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: servers.split(","),
      name: options.name ?? "casebook",
      timeout: settings.connectTimeoutMs,
      reconnect: true,
      maxReconnectAttempts: settings.maxReconnectAttempts,
      reconnectTimeWait: settings.reconnectWaitMs,
      pingInterval: settings.pingIntervalMs,
      maxPingOut: settings.maxPingsOut,
      waitOnFirstConnect: false,
      // Every call's failure is already ours, naming its operation (`#call`'s context): nats.js's
      // async traces would build an Error with a stack for every request and publish as it starts
      // (~3% of a busy ingest's main thread, measured), thrown away on success.
      noAsyncTraces: true,
    });
  } catch (error) {
    throw streamErrors.create("STREAM_UNAVAILABLE", {
      detail: `cannot connect to NATS within ${settings.connectTimeoutMs} ms: ${(error as Error).message}`,
      fields: { variable: "NATS_URL" },
      cause: error,
    });
  }
  try {
    const jsm = await jetstreamManager(nc, { timeout: settings.requestTimeoutMs, checkAPI: true });
    return new JetStreamStream(nc, jsm, settings);
  } catch (error) {
    await nc.close().catch(() => {});
    const detail = isNotEnabled(error)
      ? "the NATS server runs without JetStream: start it with -js"
      : `JetStream did not answer: ${(error as Error).message}`;
    throw streamErrors.create("STREAM_UNAVAILABLE", {
      detail,
      fields: { variable: "NATS_URL" },
      cause: error,
    });
  }
}

function definedOnly(options: JetStreamOptions): Partial<JetStreamOptions> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}
