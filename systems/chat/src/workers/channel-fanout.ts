/**
 * The big-channel fan-out (CH-20): the send path writes a channel message once and publishes
 * ONE event on the stream (NATS JetStream, or the in-process twin); one durable consumer per
 * slice of the channel's member index receives every event, and its worker delivers to its
 * slice only — members whose id hashes to it, read in pages — so the slices run in
 * parallel, in as many processes as run the send service (each consumer is shared: a slice's
 * events are taken by whichever process fetches them). An event is acked after its slice is
 * routed; a worker that dies before that leaves it to be redelivered after `ackWaitMs`, and
 * a device that gets it twice deduplicates by message id (CH-10). Channel members get no
 * push from here: a 50k-member channel wakes nobody's phone (stated in CH-24's choices).
 *
 * @example
 * const fanout = new ChannelFanout({ stream, streamName: "CHAT_CHANNELS", slices: 3, history, route, log });
 * await fanout.start();
 * await fanout.publish(message); // the send path's ChannelEvents
 * await fanout.stop();
 */
import type { StreamClient } from "@casebook/infra/stream/stream";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { systemRandom } from "@casebook/kit/random";
import type { Message } from "../domain/conversation.ts";
import type { ChannelEvents } from "../domain/send-path.ts";
import { type MessageJson, messageJson } from "../domain/wire.ts";

/** Members read per page of a slice. */
export const SLICE_PAGE = 1_000;
/** Pages per event at most: 1,000 × 1,000 members per slice, far above MAX_CHANNEL_MEMBERS / slices. */
const MAX_PAGES = 1_000;
const MAX_FETCH = 32;

export interface FanoutOptions {
  readonly stream: StreamClient;
  readonly streamName: string;
  readonly slices: number;
  readonly history: {
    memberSlice(
      chatId: bigint,
      slice: number,
      slices: number,
      after: string,
      limit: number,
    ): Promise<string[]>;
  };
  readonly route: (userIds: readonly string[], frame: Record<string, unknown>) => Promise<unknown>;
  readonly log: { warn(fields: Record<string, unknown>, message: string): void };
  readonly onSlice?: (slice: number, members: number) => void;
}

export class ChannelFanout implements ChannelEvents {
  readonly #o: FanoutOptions;
  readonly #loops: BackgroundLoop[] = [];
  readonly #subject: string;

  constructor(options: FanoutOptions) {
    this.#o = options;
    this.#subject = `chat.${options.streamName.toLowerCase()}.events`;
  }

  async start(): Promise<void> {
    const { stream, streamName, slices } = this.#o;
    await stream.ensureStream({
      name: streamName,
      subjects: [this.#subject],
      storage: "file",
      maxMessages: 1_000_000,
      maxBytes: 1_024 * 1_024 * 1_024,
      maxAgeMs: 3_600_000,
      maxMessageBytes: 256 * 1_024,
      duplicateWindowMs: 120_000,
      discard: "old",
    });
    for (let slice = 0; slice < slices; slice++) {
      await stream.ensureConsumer(streamName, {
        name: `slice-${slice}-of-${slices}`,
        filterSubject: this.#subject,
        deliver: { from: "all" },
        ackWaitMs: 30_000,
        maxDeliver: 5,
        maxAckPending: 1_000,
      });
      const loop = new BackgroundLoop({
        name: `channel fan-out slice ${slice}`,
        round: async () => (await this.#round(slice)) === MAX_FETCH,
        idleMs: 10,
        failureBackoff: { capMs: 5_000, jitter: "equal", random: systemRandom },
        onError: (err, failures) =>
          this.#o.log.warn({ err, slice, failures }, "channel fan-out round failed"),
      });
      loop.start();
      this.#loops.push(loop);
    }
  }

  /** One event per message; the stream's dedup window drops a resend's second publish. */
  async publish(message: Message): Promise<void> {
    await this.#o.stream.publish(this.#subject, JSON.stringify(messageJson(message)), {
      msgId: String(message.id),
    });
  }

  async #round(slice: number): Promise<number> {
    const { stream, streamName, slices } = this.#o;
    const events = await stream.fetch(streamName, `slice-${slice}-of-${slices}`, {
      maxMessages: MAX_FETCH,
      expiresMs: 500,
    });
    for (const event of events) {
      const message = event.json<MessageJson>();
      await this.#deliverSlice(slice, message);
      await event.ack();
    }
    return events.length;
  }

  async #deliverSlice(slice: number, message: MessageJson): Promise<void> {
    const { history, slices, route } = this.#o;
    const frame = { action: "message", message };
    let after = "";
    let members = 0;
    for (let page = 0; page < MAX_PAGES; page++) {
      const ids = await history.memberSlice(BigInt(message.chatId), slice, slices, after, SLICE_PAGE);
      if (ids.length === 0) break;
      await route(ids, frame);
      members += ids.length;
      after = ids.at(-1)!;
      if (ids.length < SLICE_PAGE) break;
    }
    this.#o.onSlice?.(slice, members);
  }

  async stop(): Promise<void> {
    await Promise.all(this.#loops.map((loop) => loop.stop()));
  }
}
