/**
 * Event types, the subscription filters over them, and the ordering-key path — the pure
 * rules the store validates input with. Matching itself runs in SQL during fan-out
 * (store/fan-out.ts); `eventTypeMatches` is its twin, kept here so the rule can be read
 * and tested without a database, and a contract test checks that both agree.
 *
 * Filter grammar: `invoice.paid` (exactly that type), `invoice.*` (every type under
 * `invoice.`, at any depth), `*` (everything). A subscription without filters receives
 * every type.
 *
 * @example
 * checkEventType("invoice.paid");                  // "invoice.paid"
 * eventTypeMatches("invoice.*", "invoice.paid");   // true
 * parseOrderingKeyPath("data.object.id");          // ["data", "object", "id"]
 */
import { storeErrors } from "../errors.ts";

export const MAX_EVENT_TYPE_CHARS = 100;
/** Most filters on one subscription: each one costs every fan-out of the tenant. */
export const MAX_EVENT_FILTERS = 50;
/** Deepest ordering-key path: payload objects nest, but not without bound. */
export const MAX_ORDERING_PATH_SEGMENTS = 8;

const SEGMENT = "[A-Za-z0-9_-]+";
const TYPE_PATTERN = new RegExp(`^${SEGMENT}(\\.${SEGMENT})*$`);
const PREFIX_FILTER = new RegExp(`^${SEGMENT}(\\.${SEGMENT})*\\.\\*$`);
const PATH_SEGMENT = /^[A-Za-z0-9_-]{1,64}$/;

/** `type` when it is a dotted name of at most MAX_EVENT_TYPE_CHARS; WEBHOOK_EVENT_INVALID otherwise. */
export function checkEventType(type: unknown): string {
  if (typeof type !== "string" || type.length > MAX_EVENT_TYPE_CHARS || !TYPE_PATTERN.test(type)) {
    throw storeErrors.create("WEBHOOK_EVENT_INVALID", { fields: { field: "type" } });
  }
  return type;
}

function isFilter(value: unknown): value is string {
  if (typeof value !== "string" || value.length > MAX_EVENT_TYPE_CHARS) return false;
  return value === "*" || TYPE_PATTERN.test(value) || PREFIX_FILTER.test(value);
}

/** The filters, deduplicated and sorted, or null (every type) when absent; WEBHOOK_SUBSCRIPTION_INVALID otherwise. */
export function checkEventFilters(filters: unknown): string[] | null {
  if (filters === undefined || filters === null) return null;
  const ok =
    Array.isArray(filters) &&
    filters.length >= 1 &&
    filters.length <= MAX_EVENT_FILTERS &&
    filters.every(isFilter);
  if (!ok) throw storeErrors.create("WEBHOOK_SUBSCRIPTION_INVALID", { fields: { field: "eventTypes" } });
  return [...new Set(filters as string[])].sort();
}

/** Whether one filter selects `type` (the SQL of fan-out says the same). */
export function eventTypeMatches(filter: string, type: string): boolean {
  if (filter === "*" || filter === type) return true;
  return filter.endsWith(".*") && type.startsWith(filter.slice(0, -1));
}

/** Whether a subscription with `filters` (null: all) receives `type`. */
export function filtersSelect(filters: readonly string[] | null, type: string): boolean {
  return filters === null || filters.some((filter) => eventTypeMatches(filter, type));
}

/**
 * The payload path whose value orders a subscription's deliveries (WH-03), dotted
 * (`data.object.id`), as the segments `#>>` takes; null when ordering is off.
 */
export function parseOrderingKeyPath(path: unknown): string[] | null {
  if (path === undefined || path === null) return null;
  const segments = typeof path === "string" ? path.split(".") : [];
  if (
    segments.length < 1 ||
    segments.length > MAX_ORDERING_PATH_SEGMENTS ||
    !segments.every((segment) => PATH_SEGMENT.test(segment))
  ) {
    throw storeErrors.create("WEBHOOK_SUBSCRIPTION_INVALID", { fields: { field: "orderingKeyPath" } });
  }
  return segments;
}
