/**
 * The click encoder's worker thread (click-encoder.ts): a batch of visits in, the INSERT's
 * parameters out (domain/click-record.ts's ClickEncoder: memoized, identical clicks folded into
 * one row; store/click-batch.ts), one message each way. Its own thread, so the visitor
 * HMAC and the user-agent patterns never run on the redirect's event loop.
 *
 * @example
 * new Worker(new URL("./click-encoder-worker.ts", import.meta.url), { workerData: { key } });
 */
import { parentPort, workerData } from "node:worker_threads";
import { ClickEncoder } from "../domain/click-record.ts";
import type { Visit } from "../domain/visit.ts";
import { toClickBatch } from "../store/click-batch.ts";

const { key } = workerData as { key: Uint8Array };
const port = parentPort;
// One for the worker's life: its memos (user-agent family, referrer host, visitor hash) span batches.
const encoder = new ClickEncoder(key);
if (port === null) throw new Error("click-encoder-worker.ts runs as a worker thread (click-encoder.ts)");

port.on("message", ({ id, visits }: { id: number; visits: Visit[] }) => {
  try {
    port.postMessage({ id, batch: toClickBatch(encoder.encode(visits)) });
  } catch (error) {
    port.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
