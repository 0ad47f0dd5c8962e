/**
 * Workspaces — the owners of links and API keys — and their keys (`usk_…`, stored hashed:
 * infra's ApiKeyTable on `workspace_api_keys`, migrations/002_links.sql). A workspace is made
 * with its first key in one transaction; the key is shown once.
 *
 * @example
 * const created = await createWorkspace(db, { id: "demo", name: "Demo" }, { nowMs, randomBytes });
 * await workspaceKeys.authenticate(db, created.apiKey.key, nowMs); // "demo"
 */
import { ApiKeyTable } from "@casebook/infra/sql/api-key-table";
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import { apiKeyScheme, type IssuedApiKey, type RandomBytes } from "@casebook/kit/api-key";
import { errors } from "../errors.ts";

export const WORKSPACE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_WORKSPACE_NAME_CHARS = 200;

export const workspaceKeys = new ApiKeyTable({
  table: "workspace_api_keys",
  ownerColumn: "workspace_id",
  ownerTable: "workspaces",
  scheme: apiKeyScheme("usk"),
});

export interface Workspace {
  id: string;
  name: string;
  createdAt: Date;
}

export interface CreatedWorkspace {
  workspace: Workspace;
  apiKey: IssuedApiKey;
}

/** A workspace and its first key, or undefined when the id is taken (ON CONFLICT: the key decides). */
export async function createWorkspaceIfAbsent(
  db: Database,
  request: { id: string; name: string },
  ctx: { nowMs: number; randomBytes: RandomBytes },
): Promise<CreatedWorkspace | undefined> {
  if (!WORKSPACE_ID_PATTERN.test(request.id)) {
    throw errors.create("WORKSPACE_INVALID", {
      fields: { field: "id", reason: "use 1-64 of A-Z a-z 0-9 _ -" },
    });
  }
  if (request.name.trim() === "" || request.name.length > MAX_WORKSPACE_NAME_CHARS) {
    throw errors.create("WORKSPACE_INVALID", {
      fields: { field: "name", reason: "1-200 characters, not blank" },
    });
  }
  const now = new Date(ctx.nowMs);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ id: string; name: string; created_at: Date }>(
      `INSERT INTO workspaces (id, name, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (id) DO NOTHING RETURNING id, name, created_at`,
      [request.id, request.name, now],
    );
    const row = rows[0];
    if (!row) return undefined;
    const apiKey = await workspaceKeys.issue(tx, row.id, ctx);
    return { workspace: { id: row.id, name: row.name, createdAt: row.created_at }, apiKey };
  });
}

export async function anyWorkspace(db: Queryable): Promise<boolean> {
  const { rowCount } = await db.query("SELECT 1 FROM workspaces LIMIT 1");
  return rowCount > 0;
}
