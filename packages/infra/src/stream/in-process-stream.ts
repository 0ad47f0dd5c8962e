/**
 * The embedded twin of NATS JetStream: an in-process log engine with the same semantics
 * (subjects and wildcards, retention bounds, dedup window, durable pull consumers with
 * explicit acks, redelivery after the ack wait, nak with delay, max deliveries), so
 * `npm start` runs on a bare machine. Not a mock: the stream contract suite runs on it
 * and on JetStream alike.
 *
 * The engine (`InProcessStreamServer`) outlives its clients, as a NATS server outlives a
 * connection: a durable consumer resumes where it left off when a new client opens it.
 * What it cannot do is outlive the process — everything is in memory (see the README
 * for every difference from JetStream).
 *
 * @example
 * const server = new InProcessStreamServer();
 * const a = server.connect();
 * await a.ensureStream({ name: "CHAT", subjects: ["chat.>"], ... });
 * await a.publish("chat.room-7", "hi", { msgId: "m-1" });
 * await a.close();
 * const b = server.connect(); // same streams, same consumer positions
 */
import { type Clock, systemClock } from "@casebook/kit/clock";
import {
  type ConsumerConfig,
  type ConsumerState,
  checkConsumerConfig,
  checkFetchOptions,
  checkName,
  checkStreamConfig,
  consumerIdentity,
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
import { streamErrors } from "./stream-errors.ts";
import { checkSubject, filtersOverlap, subjectMatches } from "./subject.ts";

/** Bound on fetches waiting on one consumer (JetStream's max_waiting default is 512). */
export const MAX_WAITING_FETCHES = 512;
/** Compact the log array once this many removed slots sit at its head. */
const COMPACT_AFTER = 1_024;

interface Entry extends StoredMessage {
  bytes: number;
  msgId: string | undefined;
}

interface Pending {
  deliveryCount: number;
  /**
   * Redeliver at or after this time on the monotonic clock (an ack wait is an interval: a wall
   * clock stepped back must not hold a message), Infinity once given up or termed.
   */
  dueMs: number;
}

/** The client a fetch belongs to: its waits end, and its messages refuse acks, once it closes. */
export interface FetchOwner {
  readonly closed: boolean;
  /** Cancels of this client's waiting fetches. */
  readonly waits: Set<() => void>;
}

interface Waiter {
  max: number;
  owner: FetchOwner;
  resolve(messages: StreamMessage[]): void;
  timer: NodeJS.Timeout;
}

interface ConsumerLog {
  config: ConsumerConfig;
  /** Next stream sequence to look at for a first delivery. */
  nextSeq: number;
  /** Delivered, not acked, keyed by stream sequence. */
  pending: Map<number, Pending>;
  /** Deliveries handed out so far, redeliveries included (JetStream's consumer sequence). */
  delivered: number;
  waiters: Waiter[];
  wake: NodeJS.Timeout | undefined;
  wakeAtMs: number;
}

interface StreamLog {
  config: StreamConfig;
  entries: Entry[];
  head: number;
  firstSeq: number;
  lastSeq: number;
  bytes: number;
  /** msgId → seq, in insertion order, so expiry walks from the front. */
  dedup: Map<string, { seq: number; timeMs: number }>;
  consumers: Map<string, ConsumerLog>;
}

function entryBytes(subject: string, data: Uint8Array, headers: Readonly<Record<string, string>>): number {
  let bytes = Buffer.byteLength(subject) + data.byteLength;
  for (const [key, value] of Object.entries(headers))
    bytes += Buffer.byteLength(key) + Buffer.byteLength(value) + 4;
  return bytes;
}

function notFound(stream: string): never {
  throw streamErrors.create("STREAM_NOT_FOUND", { fields: { stream } });
}

/** The engine: streams and consumers, shared by every client connected to it. */
export class InProcessStreamServer {
  readonly #clock: Clock;
  readonly #streams = new Map<string, StreamLog>();

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock;
  }

  /** A client of this engine; closing it leaves streams and consumers in place. */
  connect(): StreamClient {
    return new InProcessStream(this);
  }

  ensureStream(config: StreamConfig): StreamState {
    checkStreamConfig(config);
    for (const other of this.#streams.values()) {
      if (other.config.name === config.name) continue;
      for (const mine of config.subjects) {
        for (const theirs of other.config.subjects) {
          if (filtersOverlap(mine, theirs)) {
            throw streamErrors.create("STREAM_CONFIG_CONFLICT", {
              detail: `subjects ${mine} and ${theirs} (stream ${other.config.name}) overlap`,
              fields: { stream: config.name, other: other.config.name },
            });
          }
        }
      }
    }
    const existing = this.#streams.get(config.name);
    if (existing) {
      if (existing.config.storage !== config.storage) {
        throw streamErrors.create("STREAM_CONFIG_CONFLICT", {
          detail: `stream ${config.name} exists with storage ${existing.config.storage}`,
          fields: { stream: config.name, setting: "storage" },
        });
      }
      existing.config = { ...config, subjects: [...config.subjects] };
      this.#enforceLimits(existing, 0, 0);
      return this.#state(existing);
    }
    const log: StreamLog = {
      config: { ...config, subjects: [...config.subjects] },
      entries: [],
      head: 0,
      firstSeq: 0,
      lastSeq: 0,
      bytes: 0,
      dedup: new Map(),
      consumers: new Map(),
    };
    this.#streams.set(config.name, log);
    return this.#state(log);
  }

  streamState(name: string): StreamState {
    const log = this.#stream(name);
    this.#expire(log);
    return this.#state(log);
  }

  deleteStream(name: string): boolean {
    const log = this.#streams.get(name);
    if (!log) return false;
    for (const consumer of log.consumers.values()) this.#dropConsumer(consumer);
    this.#streams.delete(name);
    return true;
  }

  publish(subject: string, data: Uint8Array, options: PublishOptions): PublishAck {
    checkSubject(subject);
    const log = [...this.#streams.values()].find((s) =>
      s.config.subjects.some((f) => subjectMatches(f, subject)),
    );
    if (!log) {
      throw streamErrors.create("STREAM_NOT_FOUND", {
        detail: `no stream captures subject ${subject}`,
        fields: { subject },
      });
    }
    const nowMs = this.#clock.nowMs();
    this.#expire(log);
    const msgId = options.msgId;
    if (msgId !== undefined) {
      const seen = log.dedup.get(msgId);
      if (seen) return { stream: log.config.name, seq: seen.seq, duplicate: true };
    }
    const headers = { ...(options.headers ?? {}), ...(msgId === undefined ? {} : { "Nats-Msg-Id": msgId }) };
    const bytes = entryBytes(subject, data, headers);
    if (bytes > log.config.maxMessageBytes) {
      throw streamErrors.create("STREAM_MESSAGE_TOO_LARGE", {
        fields: { stream: log.config.name, bytes, maxMessageBytes: log.config.maxMessageBytes },
      });
    }
    this.#enforceLimits(log, 1, bytes);
    const seq = log.lastSeq + 1;
    // Copied: a caller reusing its buffer must not rewrite the log.
    const entry: Entry = {
      stream: log.config.name,
      subject,
      seq,
      data: data.slice(),
      headers,
      timeMs: nowMs,
      bytes,
      msgId,
    };
    log.entries.push(entry);
    log.lastSeq = seq;
    if (log.firstSeq === 0) log.firstSeq = seq;
    log.bytes += bytes;
    if (msgId !== undefined) log.dedup.set(msgId, { seq, timeMs: nowMs });
    for (const consumer of log.consumers.values()) this.#serveWaiters(log, consumer);
    return { stream: log.config.name, seq, duplicate: false };
  }

  getMessage(stream: string, seq: number): StoredMessage | undefined {
    const log = this.#stream(stream);
    this.#expire(log);
    const entry = this.#entry(log, seq);
    if (!entry) return undefined;
    const { bytes: _bytes, msgId: _msgId, ...stored } = entry;
    return stored;
  }

  ensureConsumer(stream: string, config: ConsumerConfig): ConsumerState {
    checkConsumerConfig(config);
    const log = this.#stream(stream);
    this.#expire(log);
    const existing = log.consumers.get(config.name);
    if (existing) {
      if (consumerIdentity(existing.config) !== consumerIdentity(config)) {
        throw streamErrors.create("STREAM_CONFIG_CONFLICT", {
          detail: `consumer ${config.name} exists with another filter, start or ack policy`,
          fields: { stream, consumer: config.name },
        });
      }
      existing.config = { ...config };
      this.#serveWaiters(log, existing);
      return this.#consumerState(log, existing);
    }
    const consumer: ConsumerLog = {
      config: { ...config },
      nextSeq: this.#startSeq(log, config),
      pending: new Map(),
      delivered: 0,
      waiters: [],
      wake: undefined,
      wakeAtMs: Number.POSITIVE_INFINITY,
    };
    log.consumers.set(config.name, consumer);
    return this.#consumerState(log, consumer);
  }

  consumerState(stream: string, name: string): ConsumerState {
    const log = this.#stream(stream);
    this.#expire(log);
    return this.#consumerState(log, this.#consumer(log, name));
  }

  deleteConsumer(stream: string, name: string): boolean {
    const log = this.#stream(stream);
    const consumer = log.consumers.get(name);
    if (!consumer) return false;
    this.#dropConsumer(consumer);
    log.consumers.delete(name);
    return true;
  }

  /** Resolves with what is available now, else waits up to `expiresMs` for the first message. */
  fetch(stream: string, name: string, options: FetchOptions, owner: FetchOwner): Promise<StreamMessage[]> {
    checkFetchOptions(options);
    const log = this.#stream(stream);
    const consumer = this.#consumer(log, name);
    this.#expire(log);
    const now = this.#take(log, consumer, options.maxMessages, owner);
    if (now.length > 0) return Promise.resolve(now);
    if (consumer.waiters.length >= MAX_WAITING_FETCHES) {
      throw streamErrors.create("STREAM_BACKPRESSURE", {
        detail: `${MAX_WAITING_FETCHES} fetches already wait on consumer ${name}`,
        fields: { stream, consumer: name },
      });
    }
    return new Promise((resolve) => {
      const cancel = () => waiter.resolve([]);
      const waiter: Waiter = {
        max: options.maxMessages,
        owner,
        resolve: (messages) => {
          clearTimeout(waiter.timer);
          consumer.waiters.splice(consumer.waiters.indexOf(waiter), 1);
          owner.waits.delete(cancel);
          this.#schedule(log, consumer);
          resolve(messages);
        },
        timer: setTimeout(cancel, options.expiresMs),
      };
      consumer.waiters.push(waiter);
      owner.waits.add(cancel);
      this.#schedule(log, consumer);
    });
  }

  // --- acks, as JetStream takes them: by stream sequence, whichever delivery they answer ---

  ack(stream: string, name: string, seq: number): void {
    this.#settle(stream, name, seq, (consumer, pending) => {
      consumer.pending.delete(seq);
      return pending !== undefined;
    });
  }

  nak(stream: string, name: string, seq: number, delayMs: number): void {
    this.#settle(stream, name, seq, (_consumer, pending) => {
      if (!pending || !Number.isFinite(pending.dueMs)) return false;
      pending.dueMs = this.#clock.monotonicMs() + delayMs;
      return true;
    });
  }

  working(stream: string, name: string, seq: number): void {
    this.#settle(stream, name, seq, (consumer, pending) => {
      if (pending && Number.isFinite(pending.dueMs))
        pending.dueMs = this.#clock.monotonicMs() + consumer.config.ackWaitMs;
      return false;
    });
  }

  term(stream: string, name: string, seq: number): void {
    this.ack(stream, name, seq);
  }

  /** Applies an ack-like change; when it frees room or makes a message due, waiting fetches get it now. */
  #settle(
    stream: string,
    name: string,
    seq: number,
    change: (c: ConsumerLog, p: Pending | undefined) => boolean,
  ): void {
    const log = this.#streams.get(stream);
    const consumer = log?.consumers.get(name);
    if (!log || !consumer) return;
    if (change(consumer, consumer.pending.get(seq))) this.#serveWaiters(log, consumer);
    this.#schedule(log, consumer);
  }

  // --- internals ---

  #stream(name: string): StreamLog {
    checkName("stream", name);
    return this.#streams.get(name) ?? notFound(name);
  }

  #consumer(log: StreamLog, name: string): ConsumerLog {
    const consumer = log.consumers.get(name);
    if (!consumer)
      throw streamErrors.create("STREAM_CONSUMER_NOT_FOUND", {
        fields: { stream: log.config.name, consumer: name },
      });
    return consumer;
  }

  #state(log: StreamLog): StreamState {
    const messages = log.entries.length - log.head;
    return {
      name: log.config.name,
      messages,
      bytes: log.bytes,
      firstSeq: messages === 0 ? (log.lastSeq === 0 ? 0 : log.lastSeq + 1) : log.firstSeq,
      lastSeq: log.lastSeq,
    };
  }

  #consumerState(log: StreamLog, consumer: ConsumerLog): ConsumerState {
    let pending = 0;
    for (let seq = Math.max(consumer.nextSeq, log.firstSeq); seq <= log.lastSeq; seq++) {
      const entry = this.#entry(log, seq);
      if (entry && this.#matches(consumer, entry)) pending++;
    }
    let ackPending = 0;
    for (const p of consumer.pending.values()) if (Number.isFinite(p.dueMs)) ackPending++;
    return { stream: log.config.name, name: consumer.config.name, ackPending, pending };
  }

  #entry(log: StreamLog, seq: number): Entry | undefined {
    if (log.firstSeq === 0 || seq < log.firstSeq || seq > log.lastSeq) return undefined;
    return log.entries[log.head + (seq - log.firstSeq)];
  }

  #matches(consumer: ConsumerLog, entry: Entry): boolean {
    const filter = consumer.config.filterSubject;
    return filter === undefined || subjectMatches(filter, entry.subject);
  }

  #startSeq(log: StreamLog, config: ConsumerConfig): number {
    const deliver = config.deliver;
    if (deliver.from === "new") return log.lastSeq + 1;
    if (deliver.from === "sequence") return deliver.sequence;
    if (deliver.from === "time") {
      for (let seq = log.firstSeq; seq > 0 && seq <= log.lastSeq; seq++) {
        const entry = this.#entry(log, seq);
        if (entry && entry.timeMs >= deliver.timeMs) return seq;
      }
      return log.lastSeq + 1;
    }
    return 1;
  }

  /** Drops messages past maxAgeMs and dedup ids past the window; runs before every read and write. */
  #expire(log: StreamLog): void {
    const nowMs = this.#clock.nowMs();
    while (log.head < log.entries.length) {
      const oldest = log.entries[log.head] as Entry;
      if (nowMs - oldest.timeMs < log.config.maxAgeMs) break;
      this.#dropOldest(log);
    }
    for (const [msgId, seen] of log.dedup) {
      if (nowMs - seen.timeMs < log.config.duplicateWindowMs) break;
      log.dedup.delete(msgId);
    }
  }

  /** Makes room for `addMessages`/`addBytes`, dropping the oldest (discard old) or refusing (discard new). */
  #enforceLimits(log: StreamLog, addMessages: number, addBytes: number): void {
    const { maxMessages, maxBytes, discard } = log.config;
    const over = () =>
      log.entries.length - log.head + addMessages > maxMessages || log.bytes + addBytes > maxBytes;
    if (discard === "new" && addMessages > 0 && over()) {
      throw streamErrors.create("STREAM_LIMIT_REACHED", {
        fields: { stream: log.config.name, maxMessages, maxBytes },
      });
    }
    while (log.head < log.entries.length && over()) this.#dropOldest(log);
  }

  #dropOldest(log: StreamLog): void {
    const oldest = log.entries[log.head] as Entry;
    log.bytes -= oldest.bytes;
    log.head++;
    log.firstSeq = oldest.seq + 1;
    if (log.head === log.entries.length) {
      log.entries = [];
      log.head = 0;
    } else if (log.head >= COMPACT_AFTER) {
      log.entries = log.entries.slice(log.head);
      log.head = 0;
    }
    for (const consumer of log.consumers.values()) consumer.pending.delete(oldest.seq);
  }

  /** Redeliveries due now (in sequence order), then first deliveries, up to `max` and maxAckPending. */
  #take(log: StreamLog, consumer: ConsumerLog, max: number, owner: FetchOwner): StreamMessage[] {
    const { config } = consumer;
    const explicit = (config.ackPolicy ?? "explicit") === "explicit";
    const nowMs = this.#clock.monotonicMs();
    const taken: Array<{ entry: Entry; deliveryCount: number }> = [];
    if (explicit) {
      const due = [...consumer.pending].filter(([, p]) => p.dueMs <= nowMs).sort(([a], [b]) => a - b);
      for (const [seq, p] of due) {
        if (taken.length >= max) break;
        const entry = this.#entry(log, seq);
        if (!entry) {
          consumer.pending.delete(seq);
          continue;
        }
        if (p.deliveryCount >= config.maxDeliver) {
          p.dueMs = Number.POSITIVE_INFINITY; // given up: JetStream stops redelivering at max_deliver
          continue;
        }
        p.deliveryCount++;
        p.dueMs = nowMs + config.ackWaitMs;
        taken.push({ entry, deliveryCount: p.deliveryCount });
      }
    }
    consumer.nextSeq = Math.max(consumer.nextSeq, log.firstSeq);
    let ackPending = explicit ? this.#ackPending(consumer) : 0;
    while (taken.length < max && consumer.nextSeq <= log.lastSeq) {
      if (explicit && ackPending >= config.maxAckPending) break;
      const entry = this.#entry(log, consumer.nextSeq) as Entry;
      consumer.nextSeq++;
      if (!this.#matches(consumer, entry)) continue;
      if (explicit) {
        consumer.pending.set(entry.seq, { deliveryCount: 1, dueMs: nowMs + config.ackWaitMs });
        ackPending++;
      }
      taken.push({ entry, deliveryCount: 1 });
    }
    if (explicit) this.#schedule(log, consumer);
    return taken.map(({ entry, deliveryCount }) =>
      this.#message(
        log.config.name,
        config.name,
        entry,
        { deliveryCount, deliverySeq: ++consumer.delivered },
        owner,
      ),
    );
  }

  #ackPending(consumer: ConsumerLog): number {
    let count = 0;
    for (const p of consumer.pending.values()) if (Number.isFinite(p.dueMs)) count++;
    return count;
  }

  #message(
    stream: string,
    consumer: string,
    entry: Entry,
    delivery: { deliveryCount: number; deliverySeq: number },
    owner: FetchOwner,
  ): StreamMessage {
    // As on a NATS connection: a closed client cannot ack what it received.
    const live = (settle: () => void) => async () => {
      if (owner.closed)
        throw streamErrors.create("STREAM_CLOSED", { fields: { stream, consumer, seq: entry.seq } });
      settle();
    };
    const { bytes: _bytes, msgId: _msgId, ...stored } = entry;
    return {
      ...stored,
      data: entry.data.slice(),
      ...delivery,
      text: () => new TextDecoder().decode(entry.data),
      json: <T>() => JSON.parse(new TextDecoder().decode(entry.data)) as T,
      ack: live(() => this.ack(stream, consumer, entry.seq)),
      nak: (delayMs = 0) => live(() => this.nak(stream, consumer, entry.seq, delayMs))(),
      working: live(() => this.working(stream, consumer, entry.seq)),
      term: live(() => this.term(stream, consumer, entry.seq)),
    };
  }

  #serveWaiters(log: StreamLog, consumer: ConsumerLog): void {
    while (consumer.waiters.length > 0) {
      const waiter = consumer.waiters[0] as Waiter;
      const messages = this.#take(log, consumer, waiter.max, waiter.owner);
      if (messages.length === 0) return;
      waiter.resolve(messages);
    }
  }

  /**
   * One timer per consumer, at the earliest redelivery, and only while fetches wait: with
   * nobody waiting a due message simply waits for the next fetch (a timer then would fire
   * again at once, forever, since nothing takes the message). One already due while a fetch
   * waits wakes it at once: a wake that fired a fraction early (libuv counts whole
   * milliseconds) re-arms in `#take`, and by the time it is re-checked here the message may
   * have come due — left out, the waiting fetch would expire with nothing (ST-04 under load).
   */
  #schedule(log: StreamLog, consumer: ConsumerLog): void {
    const nowMs = this.#clock.monotonicMs();
    let earliest = Number.POSITIVE_INFINITY;
    if (consumer.waiters.length > 0) {
      for (const p of consumer.pending.values()) if (p.dueMs < earliest) earliest = p.dueMs;
      earliest = Math.max(earliest, nowMs);
    }
    if (earliest === consumer.wakeAtMs) return;
    if (consumer.wake) clearTimeout(consumer.wake);
    consumer.wake = undefined;
    consumer.wakeAtMs = earliest;
    if (!Number.isFinite(earliest)) return;
    consumer.wake = setTimeout(() => {
      consumer.wake = undefined;
      consumer.wakeAtMs = Number.POSITIVE_INFINITY;
      if (log.consumers.get(consumer.config.name) !== consumer) return;
      this.#expire(log);
      this.#serveWaiters(log, consumer);
      this.#schedule(log, consumer);
    }, earliest - nowMs);
    // The engine must not keep the process alive for a redelivery; a waiting fetch has its own timer.
    consumer.wake.unref();
  }

  #dropConsumer(consumer: ConsumerLog): void {
    if (consumer.wake) clearTimeout(consumer.wake);
    for (const waiter of [...consumer.waiters]) waiter.resolve([]);
  }
}

/** One client of an InProcessStreamServer. */
class InProcessStream implements StreamClient {
  readonly backend = "in-process" as const;
  readonly #server: InProcessStreamServer;
  readonly #owner = { closed: false, waits: new Set<() => void>() };

  constructor(server: InProcessStreamServer) {
    this.#server = server;
  }

  #open(): InProcessStreamServer {
    if (this.#owner.closed) throw streamErrors.create("STREAM_CLOSED");
    return this.#server;
  }

  async ensureStream(config: StreamConfig): Promise<StreamState> {
    return this.#open().ensureStream(config);
  }

  async streamState(name: string): Promise<StreamState> {
    return this.#open().streamState(name);
  }

  async deleteStream(name: string): Promise<boolean> {
    return this.#open().deleteStream(name);
  }

  async publish(
    subject: string,
    data: Uint8Array | string,
    options: PublishOptions = {},
  ): Promise<PublishAck> {
    return this.#open().publish(subject, toBytes(data), options);
  }

  async getMessage(stream: string, seq: number): Promise<StoredMessage | undefined> {
    return this.#open().getMessage(stream, seq);
  }

  async ensureConsumer(stream: string, config: ConsumerConfig): Promise<ConsumerState> {
    return this.#open().ensureConsumer(stream, config);
  }

  async consumerState(stream: string, name: string): Promise<ConsumerState> {
    return this.#open().consumerState(stream, name);
  }

  async deleteConsumer(stream: string, name: string): Promise<boolean> {
    return this.#open().deleteConsumer(stream, name);
  }

  fetch(stream: string, consumer: string, options: FetchOptions): Promise<StreamMessage[]> {
    try {
      return this.#open().fetch(stream, consumer, options, this.#owner);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async ackAll(messages: readonly StreamMessage[]): Promise<void> {
    for (const message of messages) await message.ack();
  }

  /** Ends this client's waiting fetches at once (with []); what they took is redelivered after the ack wait. */
  async close(): Promise<void> {
    this.#owner.closed = true;
    for (const cancel of [...this.#owner.waits]) cancel();
  }
}
