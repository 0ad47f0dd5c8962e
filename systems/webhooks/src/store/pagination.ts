/**
 * Pages of tenant-scoped listings (WH-12): a bounded number of rows and the keyset cursor
 * of the next page (domain/store-cursor.ts), null on the last one. The store fetches one
 * row more than asked to know whether another page exists without a count.
 *
 * @example
 * const page = await listDeliveries(db, tenantId, { limit: 50 });
 * if (page.nextCursor) await listDeliveries(db, tenantId, { limit: 50, cursor: page.nextCursor });
 */
import { storeErrors } from "../errors.ts";

export const DEFAULT_PAGE_LIMIT = 50;
/** Largest page: a listing is a query the tenant controls, so its cost is bounded here. */
export const MAX_PAGE_LIMIT = 100;

export interface Page<T> {
  items: T[];
  /** Pass back as `cursor` for the next page; null when this page is the last. */
  nextCursor: string | null;
}

export interface PageRequest {
  cursor?: string;
  /** 1..MAX_PAGE_LIMIT; default DEFAULT_PAGE_LIMIT. */
  limit?: number;
}

/** The page size asked for, checked; the query should fetch one more row than this. */
export function pageLimit(limit: number | undefined, listing: string): number {
  const n = limit ?? DEFAULT_PAGE_LIMIT;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_LIMIT) {
    throw storeErrors.create("WEBHOOK_CURSOR_INVALID", {
      fields: { listing, field: "limit" },
      detail: `limit must be an integer from 1 to ${MAX_PAGE_LIMIT}.`,
    });
  }
  return n;
}

/** Cuts the `limit + 1` fetched rows to a page; `cursorOf` encodes the last row kept. */
export function toPage<Row, T>(
  rows: Row[],
  limit: number,
  map: (row: Row) => T,
  cursorOf: (row: Row) => string,
): Page<T> {
  const more = rows.length > limit;
  const kept = more ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return { items: kept.map(map), nextCursor: more && last !== undefined ? cursorOf(last) : null };
}
