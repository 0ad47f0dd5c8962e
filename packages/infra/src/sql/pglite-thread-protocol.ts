/**
 * The messages between `openPgliteThreadDatabase` (pglite-thread-database.ts) and its worker
 * thread (pglite-thread-worker.ts): one request, one answer with the same id. Id 0 is the
 * worker's "ready" (or its start-up failure). Rows and parameters cross by structured clone:
 * `Date`, `bigint`, arrays and plain objects arrive as they left; a `Buffer` arrives as a
 * `Uint8Array`.
 *
 * @example
 * worker.postMessage({ id: 7, op: "query", text: "SELECT 1", params: [] } satisfies ThreadRequest);
 */
import type { IsolationLevel, QueryResult } from "./sql.ts";

export type ThreadRequest =
  | {
      id: number;
      op: "query";
      text: string;
      params: readonly unknown[] | undefined;
      txId: number | undefined;
    }
  | { id: number; op: "exec"; script: string; txId: number | undefined }
  /** Opens a transaction whose id is this request's id; answered once BEGIN ran. */
  | { id: number; op: "begin"; isolation: IsolationLevel | undefined }
  | { id: number; op: "end"; txId: number; commit: boolean }
  | { id: number; op: "close" };

/** An error as plain data: its name, message and own fields (`code`: SQLSTATE or `SQL_…`, `fields`, `status`). */
export interface ThreadError {
  name: string;
  message: string;
  props: Record<string, unknown>;
}

export type ThreadAnswer =
  | { id: number; result: QueryResult<unknown> | "ready" | undefined }
  | { id: number; error: ThreadError };
