/**
 * The worker thread behind `openPgliteThreadDatabase` (pglite-thread-database.ts): it opens one
 * PGlite database (pglite-database.ts) and answers the calling thread's requests on it, one
 * message each way. A transaction is PGlite's own (its mutex held from BEGIN to COMMIT): `begin`
 * opens it and answers, the statements tagged with its id run on it, `end` commits or rolls it
 * back — every other request waits on PGlite's mutex meanwhile, exactly as in-process.
 *
 * @example
 * new Worker(new URL("./pglite-thread-worker.ts", import.meta.url), { workerData: { dataDir, schema } });
 */
import { parentPort, workerData } from "node:worker_threads";
import { openPgliteDatabase } from "./pglite-database.ts";
import type { ThreadAnswer, ThreadError, ThreadRequest } from "./pglite-thread-protocol.ts";
import type { Database, IsolationLevel, Queryable } from "./sql.ts";

const port = parentPort;
if (port === null)
  throw new Error("pglite-thread-worker.ts runs as a worker thread (pglite-thread-database.ts)");
const { dataDir, schema } = workerData as { dataDir: string; schema?: string };

/** Thrown inside a transaction's callback to make PGlite roll it back; never leaves this file. */
const ROLLBACK = Symbol("rollback");

interface OpenTransaction {
  tx: Queryable;
  finish: (commit: boolean) => void;
}

const transactions = new Map<number, OpenTransaction>();

/** An engine error as plain data (structured clone keeps only message and name of an Error). */
function toThreadError(error: unknown): ThreadError {
  if (!(error instanceof Error)) return { name: "Error", message: String(error), props: {} };
  const props: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value !== "function" && typeof value !== "symbol") props[key] = value;
  }
  return { name: error.name, message: error.message, props };
}

function answer(message: ThreadAnswer): void {
  try {
    port!.postMessage(message);
  } catch (error) {
    // A row the structured clone cannot copy (a function, a symbol): the caller gets the reason, not a hang.
    port!.postMessage({ id: message.id, error: toThreadError(error) });
  }
}

/** The open transactions' promises: `end` waits on one, so COMMIT's own failure is its answer. */
const outcomes = new Map<number, Promise<void>>();

function begin(db: Database, id: number, isolation: IsolationLevel | undefined): void {
  let opened = false;
  const outcome = db.transaction(
    (tx) =>
      new Promise<void>((resolve, reject) => {
        opened = true;
        transactions.set(id, { tx, finish: (commit) => (commit ? resolve() : reject(ROLLBACK)) });
        answer({ id, result: undefined });
      }),
    isolation === undefined ? {} : { isolation },
  );
  // BEGIN itself failed: the caller is still waiting for `begin`'s answer. Otherwise `end` answers.
  outcome.catch((error: unknown) => {
    if (opened) return;
    outcomes.delete(id);
    answer({ id, error: toThreadError(error) });
  });
  outcomes.set(id, outcome);
}

async function end(requestId: number, txId: number, commit: boolean): Promise<void> {
  const open = transactions.get(txId);
  const outcome = outcomes.get(txId);
  transactions.delete(txId);
  outcomes.delete(txId);
  if (open === undefined || outcome === undefined) {
    answer({ id: requestId, error: { name: "Error", message: `no open transaction ${txId}`, props: {} } });
    return;
  }
  open.finish(commit);
  try {
    await outcome;
    answer({ id: requestId, result: undefined });
  } catch (error) {
    answer(
      error === ROLLBACK
        ? { id: requestId, result: undefined }
        : { id: requestId, error: toThreadError(error) },
    );
  }
}

async function close(db: Database, id: number): Promise<void> {
  try {
    await db.close();
    answer({ id, result: undefined });
  } catch (error) {
    answer({ id, error: toThreadError(error) });
  }
  port!.close();
}

async function run(db: Database, request: ThreadRequest): Promise<void> {
  const { id } = request;
  if (request.op === "begin") return begin(db, id, request.isolation);
  if (request.op === "end") return end(id, request.txId, request.commit);
  if (request.op === "close") return close(db, id);
  const target: Queryable | undefined = request.txId === undefined ? db : transactions.get(request.txId)?.tx;
  try {
    if (target === undefined) throw new Error(`no open transaction ${request.txId}`);
    if (request.op === "query") answer({ id, result: await target.query(request.text, request.params) });
    else {
      await target.exec(request.script);
      answer({ id, result: undefined });
    }
  } catch (error) {
    answer({ id, error: toThreadError(error) });
  }
}

try {
  const db = await openPgliteDatabase({ dataDir, ...(schema === undefined ? {} : { schema }) });
  port.on("message", (request: ThreadRequest) => void run(db, request));
  port.postMessage({ id: 0, result: "ready" } satisfies ThreadAnswer);
} catch (error) {
  port.postMessage({ id: 0, error: toThreadError(error) } satisfies ThreadAnswer);
}
