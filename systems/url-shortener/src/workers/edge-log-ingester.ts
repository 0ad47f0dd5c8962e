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
 * reused inode) or a shorter one (truncated) is read from 0. Declared cost: lines the edge wrote to a rotated file after this worker's last
 * round are not read — rotate after a round (the service's close runs a last one), or not at
 * all. Lines that are not visits are skipped and counted (`skipped`).
 *
 * @example
 * const ingester = new EdgeLogIngester({ db, path: "/var/log/nginx/clicks.log", key, domainOf, intervalMs: 1_000, onError });
 * ingester.start(); … await ingester.stop();   // stop() reads to the end first
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import type { Database } from "@casebook/infra/sql/sql";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { toClickRecord } from "../domain/click-record.ts";
import { visitOfEdgeLine } from "../domain/edge-log-line.ts";
import { ClickStore } from "../store/click-store.ts";

/** Bytes read per round (a JSON line is ~300 bytes: ~3,000 clicks). */
export const EDGE_LOG_CHUNK_BYTES = 1_048_576;
const NEWLINE = 0x0a;
/** The file's first line (at most this much) is part of its identity: an inode can be reused. */
const HEAD_BYTES = 4_096;

type LogFile = Awaited<ReturnType<typeof open>>;

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

const NOTHING: IngestRound = { lines: 0, skipped: 0, more: false };

export class EdgeLogIngester {
  readonly #options: EdgeLogIngesterOptions;
  readonly #loop: BackgroundLoop;
  readonly #maxBytes: number;

  constructor(options: EdgeLogIngesterOptions) {
    this.#options = options;
    this.#maxBytes = options.maxBytes ?? EDGE_LOG_CHUNK_BYTES;
    this.#loop = new BackgroundLoop({
      name: "edge log ingester",
      round: async () => (await this.ingestOnce()).more,
      idleMs: options.intervalMs,
      failureBackoff: { capMs: Math.max(options.intervalMs, 10_000), jitter: "none" },
      onError: (error) => options.onError(error),
    });
  }

  /** One chunk, committed with its position. */
  async ingestOnce(): Promise<IngestRound> {
    const { db, path } = this.#options;
    const round = await db.transaction(async (tx) => {
      await tx.query(
        "INSERT INTO edge_log_cursors (path, file_id, position) VALUES ($1, '', 0) ON CONFLICT (path) DO NOTHING",
        [path],
      );
      const { rows } = await tx.query<{ file_id: string; position: string | bigint }>(
        "SELECT file_id, position FROM edge_log_cursors WHERE path = $1 FOR UPDATE",
        [path],
      );
      const cursor = rows[0]!;
      let file: LogFile;
      try {
        file = await open(path, "r");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return NOTHING; // the edge has logged nothing yet
        throw error;
      }
      try {
        const stat = await file.stat({ bigint: true });
        const fileId = await fileIdOf(file, stat);
        let position = cursor.file_id === fileId ? Number(cursor.position) : 0;
        if (Number(stat.size) < position) position = 0;
        const want = Math.min(this.#maxBytes, Number(stat.size) - position);
        const chunk = Buffer.alloc(Math.max(want, 0));
        const { bytesRead } = want > 0 ? await file.read(chunk, 0, want, position) : { bytesRead: 0 };
        const end = chunk.subarray(0, bytesRead).lastIndexOf(NEWLINE);
        // No newline in a full chunk: a "line" longer than any visit — skipped whole.
        const consumed = end !== -1 ? end + 1 : bytesRead === this.#maxBytes ? bytesRead : 0;
        const result = this.#parse(chunk.subarray(0, consumed), end === -1 && consumed > 0);
        await new ClickStore(tx).append(result.records);
        if (consumed > 0 || cursor.file_id !== fileId) {
          await tx.query(
            "UPDATE edge_log_cursors SET file_id = $2, position = $3, lines = lines + $4, skipped = skipped + $5 WHERE path = $1",
            [path, fileId, position + consumed, result.records.length, result.skipped],
          );
        }
        return {
          lines: result.records.length,
          skipped: result.skipped,
          more: consumed > 0 && bytesRead === this.#maxBytes,
        };
      } finally {
        await file.close();
      }
    });
    if (round.lines + round.skipped > 0) this.#options.onIngested?.(round.lines, round.skipped);
    return round;
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
