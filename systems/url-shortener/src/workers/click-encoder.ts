/**
 * The flusher's encoding, off the event loop (issue 18): turning visits into click records —
 * the visitor HMAC, the user-agent family, the referrer's host, the ISO time — cost more than
 * the redirect itself when it ran on the redirect's thread (a quarter of the process's CPU in
 * the profile at 5,000 redirects/s). Here a worker thread does it: the flusher sends a batch,
 * the worker sends back the INSERT's ten parameters (store/click-batch.ts: array literals,
 * ten strings to copy back), and the event loop only pays the copies and the INSERT.
 *
 * Bounds: one batch at a time (the flusher is sequential; a second call is refused), each
 * answered within `timeoutMs` or refused — and then the worker is ended and the next batch
 * starts a fresh one, so a stuck worker costs one batch's wait, which goes back to the buffer
 * like any refused batch (loss bounds unchanged: what does not fit is dropped and counted).
 *
 * @example
 * const encoder = new WorkerClickEncoder({ key, timeoutMs: 30_000 });
 * const batch = await encoder.encode(buffer.take(5_000));
 * await store.appendBatch(batch);
 * await encoder.close();
 */
import { Worker } from "node:worker_threads";
import type { Visit } from "../domain/visit.ts";
import type { ClickBatch } from "../store/click-batch.ts";

export interface ClickEncoding {
  encode(visits: readonly Visit[]): Promise<ClickBatch>;
  close(): Promise<void>;
}

interface Pending {
  id: number;
  resolve: (batch: ClickBatch) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

type Answer = { id: number; batch: ClickBatch } | { id: number; error: string };

const workerEntry = new URL("./click-encoder-worker.ts", import.meta.url);

export class WorkerClickEncoder implements ClickEncoding {
  readonly #key: Uint8Array;
  readonly #timeoutMs: number;
  #worker: Worker | undefined;
  #pending: Pending | undefined;
  #nextId = 0;

  /** `key`: the visitor hash's (click-record.ts); `timeoutMs`: the longest wait for one batch. */
  constructor(options: { key: Uint8Array; timeoutMs: number }) {
    this.#key = options.key;
    this.#timeoutMs = options.timeoutMs;
  }

  encode(visits: readonly Visit[]): Promise<ClickBatch> {
    if (this.#pending !== undefined) return Promise.reject(new Error("click encoder: one batch at a time"));
    const worker = this.#workerOrStart();
    return new Promise<ClickBatch>((resolve, reject) => {
      const id = ++this.#nextId;
      // Ref'd on purpose: while a batch is out, this timer keeps a closing process alive to finish the flush.
      const timer = setTimeout(() => {
        this.#fail(new Error(`click encoder: no answer in ${this.#timeoutMs} ms; restarting it`));
        void this.close();
      }, this.#timeoutMs);
      this.#pending = { id, resolve, reject, timer };
      worker.postMessage({ id, visits });
    });
  }

  #workerOrStart(): Worker {
    if (this.#worker !== undefined) return this.#worker;
    const worker = new Worker(workerEntry, { workerData: { key: this.#key } });
    // Idle, it must not keep the process alive; a batch out is held by its timer.
    worker.unref();
    worker.on("message", (answer: Answer) => {
      const pending = this.#pending;
      if (pending === undefined || pending.id !== answer.id) return;
      this.#pending = undefined;
      clearTimeout(pending.timer);
      if ("error" in answer) pending.reject(new Error(`click encoder: ${answer.error}`));
      else pending.resolve(answer.batch);
    });
    worker.on("error", (error) => this.#fail(error));
    worker.on("exit", (code) => {
      if (this.#worker === worker) this.#worker = undefined;
      this.#fail(new Error(`click encoder: its worker exited with code ${code}`));
    });
    this.#worker = worker;
    return worker;
  }

  #fail(error: Error): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    clearTimeout(pending.timer);
    pending.reject(error);
  }

  /** Ends the worker (a batch still out is refused). */
  async close(): Promise<void> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }
}
