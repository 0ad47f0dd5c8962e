/**
 * The loop a stream consumer runs (metrics rollups, chat routing, feed fan-out): fetch a
 * batch, hand each message to `handle` in delivery order, ack what it finished, nak with a
 * delay what it failed, term what it rejects; on kit's BackgroundLoop, so a stream that is
 * down costs a growing pause, not a hot retry loop. Works on both engines alike.
 *
 * Delivery is at least once: a crash between the handler and its ack delivers the message
 * again (with a higher `deliveryCount`), so the handler must be idempotent. Messages are
 * handled one at a time, so one subject's messages are handled in publish order — until a
 * nak, whose message comes back after the ones behind it.
 *
 * @example
 * const consumer = startStreamConsumer({
 *   client: stream, stream: "METRICS", consumer: "rollup",
 *   handle: async (m) => { await rollup.add(m.json<Sample>()); },   // resolve = ack
 *   maxMessages: 100, expiresMs: 5_000, idleMs: 50,
 *   retryDelayMs: (deliveryCount) => Math.min(30_000, 500 * 2 ** deliveryCount),
 *   failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
 *   onError: (error, context) => log.error({ err: error, seq: context.message?.seq }, "rollup failed"),
 * });
 * await consumer.stop(); // after the batch in progress
 */
import { BackgroundLoop, type FailureBackoff } from "@casebook/kit/background-loop";
import type { StreamClient, StreamMessage } from "./stream.ts";

/** What a handler may answer besides resolving (ack): `nak` = retry later, `term` = never again. */
export type HandleOutcome = undefined | "ack" | "nak" | "term";

export interface StreamConsumerOptions {
  client: StreamClient;
  stream: string;
  /** A durable consumer made with ensureConsumer() (its ack wait, max deliveries and filter apply). */
  consumer: string;
  /** Resolves when done (ack); throws, or answers `nak`, to be retried after `retryDelayMs`; `term` to drop it. */
  handle: (message: StreamMessage) => Promise<HandleOutcome | undefined>;
  /** Messages per fetch. */
  maxMessages: number;
  /** How long one fetch waits for a first message (a long poll: stop() may wait this long). */
  expiresMs: number;
  /** Pause after an empty fetch, and the base of the failure backoff. */
  idleMs: number;
  /** Delay of the nak after a failed handler, by the delivery that failed (1 for the first). */
  retryDelayMs: (deliveryCount: number) => number;
  /** How the pause grows while fetch or ack fail (the engine is down). */
  failureBackoff: FailureBackoff;
  /**
   * Told of every failure: a handler's (with its `message`; the message is nakked) or a
   * round's (fetch/ack, with `consecutiveFailures`; its unacked messages come back after the ack wait).
   */
  onError: (error: unknown, context: { message?: StreamMessage; consecutiveFailures?: number }) => void;
}

export interface StreamConsumer {
  readonly running: boolean;
  /** Takes no further batch; resolves once the batch in progress is handled (at most a fetch's `expiresMs` more). */
  stop(): Promise<void>;
}

/** Runs `handle` on every message of the consumer until stop(). */
export function startStreamConsumer(options: StreamConsumerOptions): StreamConsumer {
  const { client, stream, consumer, handle } = options;
  const settle = async (message: StreamMessage): Promise<void> => {
    let outcome: HandleOutcome | undefined;
    try {
      outcome = await handle(message);
    } catch (error) {
      options.onError(error, { message });
      outcome = "nak";
    }
    if (outcome === "nak") await message.nak(options.retryDelayMs(message.deliveryCount));
    else if (outcome === "term") await message.term();
    else await message.ack();
  };
  const loop = new BackgroundLoop({
    name: `stream consumer ${stream}/${consumer}`,
    round: async () => {
      const batch = await client.fetch(stream, consumer, {
        maxMessages: options.maxMessages,
        expiresMs: options.expiresMs,
      });
      for (const message of batch) await settle(message);
      return batch.length === options.maxMessages; // full: more is likely waiting
    },
    idleMs: options.idleMs,
    failureBackoff: options.failureBackoff,
    onError: (error, consecutiveFailures) => options.onError(error, { consecutiveFailures }),
  });
  loop.start();
  return {
    get running() {
      return loop.running;
    },
    stop: () => loop.stop(),
  };
}
