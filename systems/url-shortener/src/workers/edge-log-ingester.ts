/**
 * The ingester of the edge's click log (US-07, US-09, US-15): the nginx edge writes one JSON
 * line per visit it answers (hits included: edge/nginx-edge-config.ts), and this worker
 * appends them to the same day-partitioned click log the origin's own visits go to, where the
 * same rollup counts them.
 *
 * Exactly once: each round, in ONE transaction, locks the file's cursor row (FOR UPDATE),
 * reads at most `maxBytes` from the stored position, takes the complete lines (a line still
 * being written waits for the next round), appends their click records and stores the new
 * position. A crash before the commit leaves the position where it was (the lines are read
 * again, their records were never committed); replicas ingesting the same file queue on the
 * row lock. Another file at the path (rotated: another dev:ino, or another first line on a
 * reused inode) is read from 0, and the one it replaced is remembered with its position
 * (the cursor's `rotated_*`): each round first reads what is left of it at `path.1` — the
 * lines the edge wrote after the last round before the rotation, and those nginx's workers
 * write there until they reopen the log (USR1) — then the new file. A file truncated in
 * place is read again from 0. Declared costs: a rotated file's tail is followed only while
 * it is `path.1` (rotated twice between two rounds, the older tail is lost); under
 * `copytruncate` the lines written after the last round up to the truncation are in the copy
 * only (another inode) and are lost. Lines that are not visits are skipped and
 * counted (`skipped`).
 *
 * @example
 * const ingester = new EdgeLogIngester({ db, path: "/var/log/nginx/clicks.log", key, domainOf, intervalMs: 1_000, onError });
 * ingester.start(); … await ingester.stop();   // stop() reads to the end first
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { type ClickRecord, toClickRecord } from "../domain/click-record.ts";
import { visitOfEdgeLine } from "../domain/edge-log-line.ts";
import { ClickStore } from "../store/click-store.ts";

/** Bytes read per round (a JSON line is ~300 bytes: ~3,000 clicks). */
export const EDGE_LOG_CHUNK_BYTES = 1_048_576;
const NEWLINE = 0x0a;
/** The file's first line (at most this much) is part of its identity: an inode can be reused. */
const HEAD_BYTES = 4_096;

type LogFile = Awaited<ReturnType<typeof open>>;

interface CursorRow {
  file_id: string;
  position: string | bigint;
  rotated_file_id: string;
  rotated_position: string | bigint;
}

/** Where the ingester is: the file at the path, and the one rotated away from it (`path.1`). */
interface Cursor {
  fileId: string;
  position: number;
  /** "" when no rotated file has lines left to read. */
  rotatedId: string;
  rotatedPosition: number;
}

interface Chunk {
  consumed: number;
  records: ClickRecord[];
  skipped: number;
  more: boolean;
}

const sameCursor = (a: Cursor, b: Cursor) =>
  a.fileId === b.fileId &&
  a.position === b.position &&
  a.rotatedId === b.rotatedId &&
  a.rotatedPosition === b.rotatedPosition;

/** "dev:ino" of a file id. */
const devInoOf = (fileId: string) => fileId.split(":", 2).join(":");

async function openIfExists(path: string): Promise<LogFile | undefined> {
  try {
    return await open(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** "dev:ino:hash of the first line": another file at the path — even on a reused inode — reads as another. */
async function fileIdOf(file: LogFile, stat: { dev: bigint; ino: bigint; size: bigint }): Promise<string> {
  const head = Buffer.alloc(Number(stat.size < BigInt(HEAD_BYTES) ? stat.size : BigInt(HEAD_BYTES)));
  const { bytesRead } = head.length > 0 ? await file.read(head, 0, head.length, 0) : { bytesRead: 0 };
  const end = head.subarray(0, bytesRead).indexOf(NEWLINE);
  const first = head.subarray(0, end === -1 ? bytesRead : end + 1);
  return `${stat.dev}:${stat.ino}:${createHash("sha256").update(first).digest("base64url").slice(0, 16)}`;
}

export interface EdgeLogIngesterOptions {
  db: Database;
  /** The edge's click log (URL_SHORTENER_EDGE_ACCESS_LOG). */
  path: string;
  /** The visitor hash's key (click-record.ts): the same as the origin's, so both sources agree. */
  key: Uint8Array;
  /** A Host as the edge saw it → the link's domain, as the redirect route maps it. */
  domainOf: (host: string) => string;
  intervalMs: number;
  maxBytes?: number;
  /** Where a rotated log goes (logrotate's first generation). Default `${path}.1`. */
  rotatedPath?: string;
  onError: (error: unknown) => void;
  onIngested?: (lines: number, skipped: number) => void;
}

export interface IngestRound {
  /** Lines that became click records. */
  lines: number;
  /** Lines that were not visits (malformed, or too long to be one). */
  skipped: number;
  /** True when the chunk was full: more is waiting. */
  more: boolean;
}

export class EdgeLogIngester {
  readonly #options: EdgeLogIngesterOptions;
  readonly #loop: BackgroundLoop;
  readonly #maxBytes: number;
  readonly #rotatedPath: string;

  constructor(options: EdgeLogIngesterOptions) {
    this.#options = options;
    this.#maxBytes = options.maxBytes ?? EDGE_LOG_CHUNK_BYTES;
    this.#rotatedPath = options.rotatedPath ?? `${options.path}.1`;
    this.#loop = new BackgroundLoop({
      name: "edge log ingester",
      round: async () => (await this.ingestOnce()).more,
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 10_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  /** One chunk (of the rotated file's tail first, else of the file at the path), committed with its position. */
  async ingestOnce(): Promise<IngestRound> {
    const { db, path } = this.#options;
    const round = await db.transaction(async (tx) => {
      await tx.query(
        "INSERT INTO edge_log_cursors (path, file_id, position) VALUES ($1, '', 0) ON CONFLICT (path) DO NOTHING",
        [path],
      );
      const { rows } = await tx.query<CursorRow>(
        "SELECT file_id, position, rotated_file_id, rotated_position FROM edge_log_cursors WHERE path = $1 FOR UPDATE",
        [path],
      );
      const row = rows[0]!;
      const before: Cursor = {
        fileId: row.file_id,
        position: Number(row.position),
        rotatedId: row.rotated_file_id,
        rotatedPosition: Number(row.rotated_position),
      };
      const cursor = { ...before };
      const current = await openIfExists(path);
      try {
        await this.#follow(cursor, current);
        let read: Chunk | undefined;
        if (cursor.rotatedId !== "") read = await this.#readRotated(cursor);
        if (read === undefined && current !== undefined && cursor.fileId !== "") {
          read = await this.#readChunk(current, cursor.position);
          cursor.position += read.consumed;
        }
        const records = read?.records ?? [];
        const skipped = read?.skipped ?? 0;
        await new ClickStore(tx).append(records);
        if (!sameCursor(before, cursor)) {
          await tx.query(
            `UPDATE edge_log_cursors SET file_id = $2, position = $3, rotated_file_id = $4, rotated_position = $5,
               lines = lines + $6, skipped = skipped + $7 WHERE path = $1`,
            [
              path,
              cursor.fileId,
              cursor.position,
              cursor.rotatedId,
              cursor.rotatedPosition,
              records.length,
              skipped,
            ],
          );
        }
        return { lines: records.length, skipped, more: read?.more ?? false };
      } finally {
        await current?.close();
      }
    });
    if (round.lines + round.skipped > 0) this.#options.onIngested?.(round.lines, round.skipped);
    return round;
  }

  /**
   * Follows the file at the path: another file there (or none) means the one the cursor was
   * reading was rotated — it becomes the rotated file, its position kept, and the new one is
   * read from 0. An empty file has no first line yet: it is taken once it has one (on the
   * same dev:ino it is the cursor's file truncated in place, read again from 0).
   */
  async #follow(cursor: Cursor, current: LogFile | undefined): Promise<void> {
    const rotate = (nextId: string) => {
      if (cursor.fileId !== "") {
        cursor.rotatedId = cursor.fileId;
        cursor.rotatedPosition = cursor.position;
      }
      cursor.fileId = nextId;
      cursor.position = 0;
    };
    if (current === undefined) {
      if (cursor.fileId !== "") rotate(""); // renamed away, the new one not created yet
      return;
    }
    const stat = await current.stat({ bigint: true });
    const id = await fileIdOf(current, stat);
    if (stat.size === 0n) {
      if (cursor.fileId === "") return;
      if (devInoOf(cursor.fileId) === devInoOf(id)) cursor.position = 0;
      else rotate("");
      return;
    }
    if (id !== cursor.fileId) rotate(id);
    else if (Number(stat.size) < cursor.position) cursor.position = 0; // truncated in place
  }

  /** The rotated file's unread complete lines, from `path.1` while it is that file; undefined when none. */
  async #readRotated(cursor: Cursor): Promise<Chunk | undefined> {
    const old = await openIfExists(this.#rotatedPath);
    try {
      const stat = old === undefined ? undefined : await old.stat({ bigint: true });
      if (old === undefined || stat === undefined || (await fileIdOf(old, stat)) !== cursor.rotatedId) {
        // Rotated once more (or removed) before its tail was read: nothing left to follow.
        cursor.rotatedId = "";
        cursor.rotatedPosition = 0;
        return undefined;
      }
      if (Number(stat.size) <= cursor.rotatedPosition) return undefined;
      const read = await this.#readChunk(old, cursor.rotatedPosition);
      if (read.consumed === 0) return undefined; // a line still being finished there
      cursor.rotatedPosition += read.consumed;
      // More may wait here, and the file at the path surely does: the next round goes on at once.
      return { ...read, more: true };
    } finally {
      await old?.close();
    }
  }

  /** At most `maxBytes` from `position`: the complete lines, parsed. */
  async #readChunk(file: LogFile, position: number): Promise<Chunk> {
    const stat = await file.stat({ bigint: true });
    const want = Math.max(Math.min(this.#maxBytes, Number(stat.size) - position), 0);
    const chunk = Buffer.alloc(want);
    const { bytesRead } = want > 0 ? await file.read(chunk, 0, want, position) : { bytesRead: 0 };
    const end = chunk.subarray(0, bytesRead).lastIndexOf(NEWLINE);
    // No newline in a full chunk: a "line" longer than any visit — skipped whole.
    const consumed = end !== -1 ? end + 1 : bytesRead === this.#maxBytes ? bytesRead : 0;
    const { records, skipped } = this.#parse(chunk.subarray(0, consumed), end === -1 && consumed > 0);
    return { consumed, records, skipped, more: consumed > 0 && bytesRead === this.#maxBytes };
  }

  #parse(bytes: Buffer, overlong: boolean) {
    const { key, domainOf } = this.#options;
    if (overlong) return { records: [], skipped: 1 };
    const records = [];
    let skipped = 0;
    for (const line of bytes.toString("utf8").split("\n")) {
      if (line === "") continue;
      const visit = visitOfEdgeLine(line, domainOf);
      if (visit === undefined) skipped += 1;
      else records.push(toClickRecord(visit, key));
    }
    return { records, skipped };
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops the loop, then reads what the edge wrote up to now (bounded: the rounds a full chunk needs). */
  async stop(): Promise<void> {
    await this.#loop.stop();
    for (let i = 0; i < 1_000 && (await this.ingestOnce()).more; i++);
  }
}
