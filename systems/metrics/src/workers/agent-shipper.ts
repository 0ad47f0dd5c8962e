/**
 * The agent's two loops (MT-03, MT-04), both on kit's BackgroundLoop. The cutter, every
 * `batchMs` (5 s by default), closes the aggregator's due windows and turns the points into
 * remote-write batches (`domain/agent-batch.ts`: protobuf + snappy) pushed onto the spool
 * (`store/agent-spool.ts`). The sender takes the spool's oldest batch, POSTs it to the
 * ingest's `/api/v1/write` with the agent's API key (infra's outbound client: a timeout per
 * phase), and on a 2xx acknowledges it; a 4xx other than 429 (the ingest refused the batch
 * for good) drops it, counted; anything else — the ingest down, 5xx, 429, a timeout — leaves
 * it first in line and the loop backs off (doubling up to `retryCapMs`). One batch in flight,
 * so batches arrive in order; a batch the ingest stored but whose answer was lost is sent
 * again and the ingest skips its exact repeats. Nothing here runs on the application's path.
 *
 * @example
 * const shipper = new AgentShipper({ aggregator, spool, ingestUrl, apiKey, batchMs: 5_000, clock, ... });
 * shipper.start(); … await shipper.stop();
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import type { AgentAggregator } from "../domain/agent-aggregator.ts";
import { agentBatches } from "../domain/agent-batch.ts";
import type { AgentSpool } from "../store/agent-spool.ts";

export const DEFAULT_AGENT_BATCH_MS = 5_000;
export const DEFAULT_AGENT_RETRY_CAP_MS = 30_000;
export const MAX_AGENT_REQUEST_BYTES = 64 * 1024 * 1024;

export interface AgentShipperOptions {
  readonly aggregator: AgentAggregator;
  readonly spool: AgentSpool;
  readonly ingestUrl: string;
  readonly apiKey: string;
  readonly batchMs: number;
  readonly retryCapMs: number;
  readonly maxBatchSamples: number;
  readonly clock: Clock;
  readonly onSent: (samples: number, compressedBytes: number) => void;
  readonly onRejected: (samples: number, status: number, detail: string) => void;
  readonly onError: (what: string, error: unknown, failures: number) => void;
}

export class AgentShipper {
  readonly #options: AgentShipperOptions;
  readonly #client = new OutboundClient({
    addressGuard: "off", // the operator's ingest, not a user-supplied URL
    timeouts: { connectMs: 2_000, headersMs: 10_000, bodyMs: 5_000 },
    maxRequestBytes: MAX_AGENT_REQUEST_BYTES,
    userAgent: "casebook-metrics-agent",
  });
  readonly #cutter: BackgroundLoop;
  readonly #sender: BackgroundLoop;
  /** Requests sent (answered or not): MT-03's "fewer requests" is records ÷ this. */
  requests = 0;

  constructor(options: AgentShipperOptions) {
    this.#options = options;
    this.#cutter = new BackgroundLoop({
      name: "metrics agent cutter",
      idleMs: options.batchMs,
      round: async () => {
        await this.cut();
        return false;
      },
      failureBackoff: { capMs: options.batchMs, jitter: "none" },
      onError: (error, failures) => options.onError("cut", error, failures),
    });
    this.#sender = new BackgroundLoop({
      name: "metrics agent sender",
      idleMs: options.batchMs,
      round: () => this.#sendOldest(),
      failureBackoff: { capMs: options.retryCapMs, jitter: "none" },
      onError: (error, failures) => options.onError("send", error, failures),
    });
  }

  start(): void {
    this.#cutter.start();
    this.#sender.start();
  }

  /** Stops both loops; a last cut keeps the closed points in the spool (on disk if memory was full). */
  async stop(): Promise<void> {
    await Promise.all([this.#cutter.stop(), this.#sender.stop()]);
  }

  /** Closes due windows into batches on the spool; returns the batches made. */
  async cut(): Promise<number> {
    const { aggregator, spool, clock, maxBatchSamples } = this.#options;
    const batches = agentBatches(aggregator.closeDue(clock.nowMs()), { maxSamples: maxBatchSamples });
    for (const batch of batches) await spool.push(batch);
    if (batches.length > 0) this.#sender.wake();
    return batches.length;
  }

  /** One send of the oldest batch; true when more are waiting. Throws (→ backoff) when it stays. */
  async #sendOldest(): Promise<boolean> {
    const { spool } = this.#options;
    const head = await spool.head();
    if (head === undefined) return false;
    let status: number;
    let detail = "";
    try {
      this.requests++;
      const res = await this.#client.request({
        method: "POST",
        url: new URL("/api/v1/write", this.#options.ingestUrl),
        headers: {
          authorization: `Bearer ${this.#options.apiKey}`,
          "content-type": "application/x-protobuf",
          "content-encoding": "snappy",
          "x-prometheus-remote-write-version": "0.1.0",
        },
        body: head.body,
      });
      status = res.status;
      detail = res.body.toString("utf8").slice(0, 512);
    } catch (error) {
      spool.release(head.id);
      throw error;
    }
    if (status >= 200 && status < 300) {
      await spool.ack(head.id);
      this.#options.onSent(head.samples, head.bytes);
      return spool.size > 0;
    }
    if (status >= 400 && status < 500 && status !== 429) {
      await spool.ack(head.id);
      this.#options.onRejected(head.samples, status, detail);
      return spool.size > 0;
    }
    spool.release(head.id);
    throw new Error(`ingest answered ${status}: ${detail}`);
  }
}
