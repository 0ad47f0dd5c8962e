/**
 * The media rows of chat (CH-24; schema: migrations/008_media.sql): one per authorized upload,
 * marked stored once its object is found at the declared size. The only file that speaks SQL
 * about media; the rules are in `domain/media.ts`, the flow in `api/media-routes.ts`.
 *
 * @example
 * const rows = new MediaStore(db);
 * await rows.authorize({ id, ownerId: "ana", contentType: "image/png", bytes: 2_048, nowMs, expiresAtMs });
 * await rows.readableBy(id, "bruno"); // the row when bruno may see it, else undefined
 * await rows.sweepOrphans(Date.now() - 86_400_000, 100); // ids of day-old uploads nobody sent
 */
import type { Database } from "@casebook/infra/sql/sql";
import { isForeignKeyViolation } from "@casebook/infra/sql/sql-state";
import { MAX_PENDING_UPLOADS } from "../domain/media.ts";
import { errors } from "../errors.ts";

export interface MediaRow {
  readonly id: bigint;
  readonly ownerId: string;
  readonly contentType: string;
  readonly bytes: number;
  /** Set once stored. */
  readonly sha256: string | undefined;
  readonly uploadExpiresAtMs: number;
}

interface Row {
  id: bigint;
  owner_id: string;
  content_type: string;
  bytes: bigint | number;
  sha256: string | null;
  upload_expires_at: Date;
}

const COLUMNS = "id, owner_id, content_type, bytes, sha256, upload_expires_at";
/** No message carries the media row `md`. */
const UNCARRIED = "NOT EXISTS (SELECT 1 FROM messages m WHERE m.media_id = md.id)";

function rowOf(row: Row): MediaRow {
  return {
    id: row.id,
    ownerId: row.owner_id,
    contentType: row.content_type,
    bytes: Number(row.bytes),
    sha256: row.sha256 ?? undefined,
    uploadExpiresAtMs: row.upload_expires_at.getTime(),
  };
}

export class MediaStore {
  readonly #db: Database;

  constructor(db: Database) {
    this.#db = db;
  }

  /**
   * A new pending upload of the owner. Refused (CHAT_MEDIA_PENDING_TOO_MANY) when the owner
   * already has MAX_PENDING_UPLOADS whose URLs are still valid: the count and the insert are
   * one transaction, under a lock on the owner's name, so racing requests cannot pass the bound.
   */
  async authorize(input: {
    id: bigint;
    ownerId: string;
    contentType: string;
    bytes: number;
    nowMs: number;
    expiresAtMs: number;
  }): Promise<MediaRow> {
    return this.#db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('chat-media:' || $1))", [input.ownerId]);
      const { rows: pending } = await tx.query<{ n: bigint | number }>(
        `SELECT count(*) AS n FROM media
         WHERE owner_id = $1 AND stored_at IS NULL AND upload_expires_at > $2`,
        [input.ownerId, new Date(input.nowMs)],
      );
      if (Number(pending[0]?.n ?? 0) >= MAX_PENDING_UPLOADS) {
        throw errors.create("CHAT_MEDIA_PENDING_TOO_MANY", { fields: { limit: MAX_PENDING_UPLOADS } });
      }
      const { rows } = await tx.query<Row>(
        `INSERT INTO media (id, owner_id, content_type, bytes, created_at, upload_expires_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${COLUMNS}`,
        [
          String(input.id),
          input.ownerId,
          input.contentType,
          input.bytes,
          new Date(input.nowMs),
          new Date(input.expiresAtMs),
        ],
      );
      return rowOf(rows[0]!);
    });
  }

  /** Records the stored object's digest (once: a second call keeps the first); undefined when the row is gone (swept). */
  async markStored(id: bigint, sha256: string, nowMs: number): Promise<MediaRow | undefined> {
    const { rows } = await this.#db.query<Row>(
      `UPDATE media SET sha256 = coalesce(sha256, $2), stored_at = coalesce(stored_at, $3)
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [String(id), sha256, new Date(nowMs)],
    );
    return rows[0] && rowOf(rows[0]);
  }

  /**
   * The media when `viewer` may see it: its uploader, or a member of a conversation with a
   * message that carries it (a deleted message no longer does).
   */
  async readableBy(id: bigint, viewer: string): Promise<MediaRow | undefined> {
    const { rows } = await this.#db.query<Row>(
      `SELECT ${COLUMNS} FROM media md WHERE md.id = $1 AND (md.owner_id = $2 OR EXISTS (
         SELECT 1 FROM messages m JOIN members mb ON mb.chat_id = m.chat_id AND mb.user_id = $2
         WHERE m.media_id = $1))`,
      [String(id), viewer],
    );
    return rows[0] && rowOf(rows[0]);
  }

  /**
   * Deletes up to `limit` media rows created before `cutoffMs` that no message carries, oldest
   * first, and returns their ids (their objects are the caller's to remove). Rows a send is
   * attaching right now are locked by its insert and skipped; the foreign key refuses the rest
   * of that race (migrations/009_media_sweep.sql) — the batch is then redone row by row,
   * keeping the one a message carries. Several sweepers may run: each row is deleted by one.
   */
  async sweepOrphans(cutoffMs: number, limit: number): Promise<bigint[]> {
    const cutoff = new Date(cutoffMs);
    try {
      const { rows } = await this.#db.query<{ id: bigint }>(
        `DELETE FROM media WHERE id IN (
           SELECT md.id FROM media md WHERE md.created_at < $1 AND ${UNCARRIED}
           ORDER BY md.created_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING id`,
        [cutoff, limit],
      );
      return rows.map((row) => BigInt(row.id));
    } catch (err) {
      // A send committed a message carrying one of them after this statement's snapshot was
      // taken: the foreign key refused the whole statement. Row by row, that one is kept.
      if (!isForeignKeyViolation(err)) throw err;
      return this.#sweepOneByOne(cutoff, limit);
    }
  }

  async #sweepOneByOne(cutoff: Date, limit: number): Promise<bigint[]> {
    const { rows: candidates } = await this.#db.query<{ id: bigint }>(
      `SELECT md.id FROM media md WHERE md.created_at < $1 AND ${UNCARRIED} ORDER BY md.created_at LIMIT $2`,
      [cutoff, limit],
    );
    const swept: bigint[] = [];
    for (const { id } of candidates) {
      try {
        const { rows } = await this.#db.query<{ id: bigint }>(
          `DELETE FROM media md WHERE md.id = $1 AND ${UNCARRIED} RETURNING id`,
          [String(id)],
        );
        if (rows[0]) swept.push(BigInt(rows[0].id));
      } catch (err) {
        if (!isForeignKeyViolation(err)) throw err;
      }
    }
    return swept;
  }

  /** Which of `ids` still have a media row. */
  async existing(ids: readonly bigint[]): Promise<Set<bigint>> {
    if (ids.length === 0) return new Set();
    const { rows } = await this.#db.query<{ id: bigint }>(
      "SELECT id FROM media WHERE id = ANY($1::bigint[])",
      [ids.map(String)],
    );
    return new Set(rows.map((row) => BigInt(row.id)));
  }
}
