/**
 * Links in SQL (migrations/002_links.sql), every query by key or scoped to the workspace
 * that owns the link (another workspace's link reads as absent):
 *
 * - `insertGenerated`: a plain INSERT — the code is unique by construction (US-05), so no
 *   lookup comes first; a primary-key violation here would be a bug, and surfaces as one.
 * - `insertAlias`: INSERT … ON CONFLICT DO NOTHING — the conditional write of US-18: of two
 *   clients racing for one alias the database lets exactly one row in.
 * - `resolve`: the redirect's read, by (domain, code), the columns the decision needs (US-13).
 * - `list`: newest first, keyset pages on (created_at, domain, code), optionally one tag.
 * - `update`, `remove`, `setDisabled` (admin, US-16), `reapExpired` (US-12: PostgreSQL has no
 *   TTL, so expired rows are deleted in bounded batches by the reaper).
 *
 * @example
 * const links = new LinkRepository(db);
 * await links.insertAlias({ domain: "s.example", code: "launch", workspaceId: "demo", target, ... }); // true
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { RedirectStatus } from "../domain/link-rules.ts";
import type { ResolvedLink } from "../domain/redirect-decision.ts";

/** What a link is made of, whichever way it is made. */
interface LinkFields {
  domain: string;
  code: string;
  workspaceId: string;
  target: string;
  status: RedirectStatus;
  cacheMaxAgeS: number;
  forwardQuery: boolean;
  isAlias: boolean;
  expiresAt: Date | null;
}

export interface NewLink extends LinkFields {
  tags: readonly string[];
  nowMs: number;
}

export interface LinkView extends LinkFields {
  tags: string[];
  disabledAt: Date | null;
  disabledReason: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface LinkPatch {
  target?: string;
  status?: RedirectStatus;
  cacheMaxAgeS?: number;
  forwardQuery?: boolean;
  tags?: readonly string[];
  /** null clears the expiry. */
  expiresAt?: Date | null;
}

export interface ListQuery {
  tag?: string | undefined;
  limit: number;
  after?: ListCursor | undefined;
}

/** The last row of a page: the next page starts strictly after it. */
export interface ListCursor {
  createdAt: Date;
  domain: string;
  code: string;
}

interface LinkRow {
  domain: string;
  code: string;
  workspace_id: string;
  target: string;
  status: number;
  cache_max_age_s: number;
  forward_query: boolean;
  is_alias: boolean;
  tags: string[];
  expires_at: Date | null;
  disabled_at: Date | null;
  disabled_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `domain, code, workspace_id, target, status, cache_max_age_s, forward_query, is_alias, tags,
  expires_at, disabled_at, disabled_reason, created_at, updated_at`;

function toView(row: LinkRow): LinkView {
  return {
    domain: row.domain,
    code: row.code,
    workspaceId: row.workspace_id,
    target: row.target,
    status: row.status as RedirectStatus,
    cacheMaxAgeS: row.cache_max_age_s,
    forwardQuery: row.forward_query,
    isAlias: row.is_alias,
    tags: row.tags,
    expiresAt: row.expires_at,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** Bound on rows one reaper statement deletes: a big backlog is many short statements, not one long lock. */
export const MAX_REAP_BATCH = 10_000;

export class LinkRepository {
  readonly #db: Queryable;

  constructor(db: Queryable) {
    this.#db = db;
  }

  #insertParams(link: NewLink): unknown[] {
    const now = new Date(link.nowMs);
    return [
      link.domain,
      link.code,
      link.workspaceId,
      link.target,
      link.status,
      link.cacheMaxAgeS,
      link.forwardQuery,
      link.isAlias,
      [...link.tags],
      link.expiresAt,
      now,
    ];
  }

  async insertGenerated(link: NewLink): Promise<LinkView> {
    const { rows } = await this.#db.query<LinkRow>(
      `INSERT INTO links (domain, code, workspace_id, target, status, cache_max_age_s, forward_query, is_alias, tags,
                          expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) RETURNING ${COLUMNS}`,
      this.#insertParams(link),
    );
    return toView(rows[0]!);
  }

  /** The link, or undefined when the alias is taken on this domain (nothing written then). */
  async insertAlias(link: NewLink): Promise<LinkView | undefined> {
    const { rows } = await this.#db.query<LinkRow>(
      `INSERT INTO links (domain, code, workspace_id, target, status, cache_max_age_s, forward_query, is_alias, tags,
                          expires_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
       ON CONFLICT (domain, code) DO NOTHING RETURNING ${COLUMNS}`,
      this.#insertParams(link),
    );
    return rows[0] ? toView(rows[0]) : undefined;
  }

  async resolve(domain: string, code: string): Promise<ResolvedLink | undefined> {
    const { rows } = await this.#db.query<{
      target: string;
      status: number;
      cache_max_age_s: number;
      forward_query: boolean;
      expires_at: Date | null;
      disabled: boolean;
    }>(
      `SELECT target, status, cache_max_age_s, forward_query, expires_at, disabled_at IS NOT NULL AS disabled
         FROM links WHERE domain = $1 AND code = $2`,
      [domain, code],
    );
    const row = rows[0];
    if (!row) return undefined;
    return {
      target: row.target,
      status: row.status as RedirectStatus,
      cacheMaxAgeS: row.cache_max_age_s,
      forwardQuery: row.forward_query,
      expiresAtMs: row.expires_at?.getTime() ?? null,
      disabled: row.disabled,
    };
  }

  async get(workspaceId: string, domain: string, code: string): Promise<LinkView | undefined> {
    const { rows } = await this.#db.query<LinkRow>(
      `SELECT ${COLUMNS} FROM links WHERE domain = $1 AND code = $2 AND workspace_id = $3`,
      [domain, code, workspaceId],
    );
    return rows[0] ? toView(rows[0]) : undefined;
  }

  /** The link before and after the patch, or undefined when the workspace has no such link. */
  async update(
    workspaceId: string,
    domain: string,
    code: string,
    patch: LinkPatch,
    nowMs: number,
  ): Promise<{ before: LinkView; after: LinkView } | undefined> {
    const { rows } = await this.#db.query<LinkRow & { old_target: string; old_status: number }>(
      `WITH old AS (SELECT target, status FROM links WHERE domain = $1 AND code = $2 AND workspace_id = $3 FOR UPDATE)
       UPDATE links l SET
         target = COALESCE($4, l.target),
         status = COALESCE($5, l.status),
         cache_max_age_s = COALESCE($6, l.cache_max_age_s),
         forward_query = COALESCE($7, l.forward_query),
         tags = COALESCE($8, l.tags),
         expires_at = CASE WHEN $9 THEN $10 ELSE l.expires_at END,
         updated_at = $11
       FROM old WHERE l.domain = $1 AND l.code = $2 AND l.workspace_id = $3
       RETURNING ${COLUMNS.split(",")
         .map((c) => `l.${c.trim()}`)
         .join(", ")}, old.target AS old_target, old.status AS old_status`,
      [
        domain,
        code,
        workspaceId,
        patch.target ?? null,
        patch.status ?? null,
        patch.cacheMaxAgeS ?? null,
        patch.forwardQuery ?? null,
        patch.tags === undefined ? null : [...patch.tags],
        patch.expiresAt !== undefined,
        patch.expiresAt ?? null,
        new Date(nowMs),
      ],
    );
    const row = rows[0];
    if (!row) return undefined;
    const after = toView(row);
    return { before: { ...after, target: row.old_target, status: row.old_status as RedirectStatus }, after };
  }

  async remove(workspaceId: string, domain: string, code: string): Promise<boolean> {
    const { rowCount } = await this.#db.query(
      "DELETE FROM links WHERE domain = $1 AND code = $2 AND workspace_id = $3",
      [domain, code, workspaceId],
    );
    return rowCount === 1;
  }

  /** Admin: disable (with a reason) or re-enable a link, whoever owns it; false when there is none. */
  async setDisabled(
    domain: string,
    code: string,
    disabled: { reason: string } | null,
    nowMs: number,
  ): Promise<boolean> {
    const { rowCount } = await this.#db.query(
      `UPDATE links SET disabled_at = $3, disabled_reason = $4, updated_at = $5 WHERE domain = $1 AND code = $2`,
      [domain, code, disabled ? new Date(nowMs) : null, disabled?.reason ?? null, new Date(nowMs)],
    );
    return rowCount === 1;
  }

  async list(workspaceId: string, query: ListQuery): Promise<LinkView[]> {
    const after = query.after;
    const { rows } = await this.#db.query<LinkRow>(
      `SELECT ${COLUMNS} FROM links
        WHERE workspace_id = $1
          AND ($2::text IS NULL OR tags @> ARRAY[$2::text])
          AND ($3::timestamptz IS NULL OR (created_at, domain, code) < ($3::timestamptz, $4::text, $5::text))
        ORDER BY created_at DESC, domain DESC, code DESC
        LIMIT $6`,
      [
        workspaceId,
        query.tag ?? null,
        after?.createdAt ?? null,
        after?.domain ?? null,
        after?.code ?? null,
        query.limit,
      ],
    );
    return rows.map(toView);
  }

  /** Deletes up to `maxRows` links expired at or before `beforeMs`; returns how many. */
  async reapExpired(beforeMs: number, maxRows: number): Promise<number> {
    const { rowCount } = await this.#db.query(
      `DELETE FROM links WHERE (domain, code) IN (
         SELECT domain, code FROM links WHERE expires_at <= $1 LIMIT $2)`,
      [new Date(beforeMs), Math.min(maxRows, MAX_REAP_BATCH)],
    );
    return rowCount;
  }
}
