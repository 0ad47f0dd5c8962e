/**
 * The click encoder's worker thread (click-encoder.ts): a batch of visits in, the INSERT's
 * parameters out (domain/click-record.ts, store/click-batch.ts), one message each way. Its own thread, so the visitor
 * HMAC and the user-agent patterns never run on the redirect's event loop.
 *
 * @example
 * new Worker(new URL("./click-encoder-worker.ts", import.meta.url), { workerData: { key } });
 */
import { parentPort, workerData } from "node:worker_threads";
import { toClickColumns } from "../domain/click-record.ts";
import type { Visit } from "../domain/visit.ts";
import { toClickBatch } from "../store/click-batch.ts";

const { key } = workerData as { key: Uint8Array };
const port = parentPort;
if (port === null) throw new Error("click-encoder-worker.ts runs as a worker thread (click-encoder.ts)");

port.on("message", ({ id, visits }: { id: number; visits: Visit[] }) => {
  try {
    port.postMessage({ id, batch: toClickBatch(toClickColumns(visits, key)) });
  } catch (error) {
    port.postMessage({ id, error: error instanceof Error ? error.message : String(error) });
  }
});
