/**
 * MIGRATE's transport: a synchronous call from the command (the node blocks, as
 * Redis's MIGRATE does) to a worker thread that talks to the target's bus. The main
 * thread posts the frame, waits on a shared flag with `Atomics.wait` (bounded by the
 * timeout), then reads the worker's answer with `receiveMessageOnPort` — no event loop
 * turn in between, so the keys being moved cannot change under the transfer.
 *
 * The target must be another process: a node cannot migrate to a node in its own
 * thread (it would wait for itself); tests run cluster nodes as processes.
 *
 * @example
 * const transfer = new KeyTransfer();
 * const result = transfer.send("127.0.0.1", 17001, encodeFrame(["RESTORE", …]), 2_000);
 * if (result.ok) …; // result.reply: ["RESTORED", "100"]
 * await transfer.close();
 */
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import type { TransferResult } from "../workers/cluster-transfer-worker.ts";

/** Extra wait beyond the worker's own timeout, for the worker to report it. */
const REPORT_SLACK_MS = 1_000;

export class KeyTransfer {
  #worker: Worker | undefined;
  #port: MessagePort | undefined;
  #flag: Int32Array | undefined;
  #seq = 0;

  /** Sends `frame` to host:port and returns the reply frame, or why there is none. */
  send(host: string, port: number, frame: Buffer, timeoutMs: number): TransferResult {
    const { flag, channel } = this.#start();
    this.#seq += 1;
    const seq = this.#seq;
    channel.postMessage({ seq, host, port, frame, timeoutMs });
    const deadline = performance.now() + timeoutMs + REPORT_SLACK_MS;
    for (;;) {
      const seen = Atomics.load(flag, 0);
      if (seen >= seq) break;
      const leftMs = deadline - performance.now();
      if (leftMs <= 0)
        return { seq, ok: false, error: `the transfer thread did not report within ${timeoutMs} ms` };
      Atomics.wait(flag, 0, seen, leftMs);
    }
    // Earlier answers that came after their caller gave up are stale: skip to ours.
    for (
      let message = receiveMessageOnPort(channel);
      message !== undefined;
      message = receiveMessageOnPort(channel)
    ) {
      const result = message.message as TransferResult;
      if (result.seq === seq) return result;
    }
    return { seq, ok: false, error: "the transfer thread's answer went missing" };
  }

  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    this.#port?.close();
    if (worker !== undefined) await worker.terminate();
  }

  #start(): { flag: Int32Array; channel: MessagePort } {
    if (this.#worker === undefined || this.#port === undefined || this.#flag === undefined) {
      const signal = new SharedArrayBuffer(4);
      const { port1, port2 } = new MessageChannel();
      this.#worker = new Worker(new URL("../workers/cluster-transfer-worker.ts", import.meta.url), {
        workerData: { signal, port: port2 },
        transferList: [port2],
      });
      // The worker never keeps the node alive, and its crash is reported through the timeout.
      this.#worker.unref();
      this.#worker.on("error", () => {
        this.#worker = undefined;
      });
      this.#port = port1;
      this.#flag = new Int32Array(signal);
      this.#seq = 0;
    }
    return { flag: this.#flag, channel: this.#port };
  }
}
