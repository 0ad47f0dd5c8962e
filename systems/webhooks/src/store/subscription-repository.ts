/**
 * Subscriptions (endpoints) and their signing secrets (schema: migrations/002_subscriptions.sql).
 * Every function takes the tenant and filters on it: another tenant's id answers
 * "not found", never "forbidden", so ids cannot be probed (WH-12).
 *
 * The URL is checked here only for shape (http/https, no credentials, ≤ 2048 chars); the
 * SSRF policy (domain/url-policy.ts) belongs to the API on write and to the sender at
 * send time, where the resolved address is known.
 *
 * Secret rotation (WH-02) adds a version and gives every older live secret an expiry
 * `overlapMs` later: during the overlap the sender signs with all live secrets, so the
 * receiver can switch at its own pace.
 *
 * @example
 * const { subscription, secret } = await createSubscription(db, tenantId, { url, eventTypes: ["invoice.*"] }, ctx);
 * await setSubscriptionActive(db, tenantId, subscription.id, { active: false, reason: "paused by tenant", nowMs });
 */
import type { Database, Queryable } from "@casebook/infra/sql/sql";
import type { SubscriptionStatus } from "../domain/endpoint-health.ts";
import { MAX_LIVE_SECRETS } from "../domain/secret-rotation.ts";
import { decodeCursor, encodeCursor } from "../domain/store-cursor.ts";
import { checkEventFilters, parseOrderingKeyPath } from "../domain/store-event-type.ts";
import { isId, newId, type RandomBytes } from "../domain/store-ids.ts";
import { deliveryErrors, storeErrors } from "../errors.ts";
import { type Page, type PageRequest, pageLimit, toPage } from "./pagination.ts";
import type { WriteContext } from "./tenant-repository.ts";

export const MAX_URL_CHARS = 2_048;
export const MAX_RATE_LIMIT_PER_S = 10_000;
export const MAX_CONCURRENCY = 100;
export const DEFAULT_MAX_CONCURRENCY = 4;
/** Random bytes of a generated secret (Standard Webhooks allows 24–64). */
export const SECRET_BYTES = 24;
/** Longest overlap of a rotation: old secrets sign at most this long after it. */
export const MAX_SECRET_OVERLAP_MS = 7 * 86_400_000;
export const MAX_REASON_CHARS = 200;
const SECRET_PATTERN = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;

export interface Subscription {
  id: string;
  tenantId: string;
  url: string;
  /** null: every event type. */
  eventTypes: string[] | null;
  active: boolean;
  disabledReason: string | null;
  /** The endpoint's health (domain/endpoint-health.ts); active ⇔ status is active or failing. */
  status: SubscriptionStatus;
  /** Why the current status; null when active. */
  statusReason: string | null;
  /** First failure of the current failing run; null when the last attempt succeeded. */
  failingSince: Date | null;
  /** Client errors in a row (the quarantine input), and when the first of them arrived. */
  clientErrors: number;
  clientErrorsSince: Date | null;
  secretVersion: number;
  rateLimitPerS: number | null;
  maxConcurrency: number;
  /** Dotted payload path ordering this endpoint's deliveries (WH-03), or null. */
  orderingKeyPath: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface NewSubscription {
  url: string;
  eventTypes?: string[] | null;
  rateLimitPerS?: number | null;
  maxConcurrency?: number;
  orderingKeyPath?: string | null;
  /** A `whsec_…` secret the tenant chose; default a fresh random one. */
  secret?: string;
}

interface SubscriptionRow {
  id: string;
  tenant_id: string;
  url: string;
  event_types: string[] | null;
  active: boolean;
  disabled_reason: string | null;
  status: SubscriptionStatus;
  status_reason: string | null;
  failing_since: Date | null;
  client_errors: number;
  client_errors_since: Date | null;
  secret_version: number;
  rate_limit_per_s: number | null;
  max_concurrency: number;
  ordering_key_path: string[] | null;
  created_at: Date;
  updated_at: Date;
}

function toSubscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    url: row.url,
    eventTypes: row.event_types,
    active: row.active,
    disabledReason: row.disabled_reason,
    status: row.status,
    statusReason: row.status_reason,
    failingSince: row.failing_since,
    clientErrors: row.client_errors,
    clientErrorsSince: row.client_errors_since,
    secretVersion: row.secret_version,
    rateLimitPerS: row.rate_limit_per_s,
    maxConcurrency: row.max_concurrency,
    orderingKeyPath: row.ordering_key_path === null ? null : row.ordering_key_path.join("."),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

function invalid(field: string): Error {
  return storeErrors.create("WEBHOOK_SUBSCRIPTION_INVALID", { fields: { field } });
}

function notFound(id: string): Error {
  return storeErrors.create("WEBHOOK_SUBSCRIPTION_NOT_FOUND", { fields: { id } });
}

/** `url` when it is an absolute http(s) URL without credentials, within MAX_URL_CHARS. */
export function checkEndpointUrl(url: unknown): string {
  if (typeof url !== "string" || url.length > MAX_URL_CHARS || !URL.canParse(url)) throw invalid("url");
  const parsed = new URL(url);
  const schemeOk = parsed.protocol === "https:" || parsed.protocol === "http:";
  // Credentials in a URL end up in logs and listings; endpoints authenticate us by signature.
  if (!schemeOk || parsed.username !== "" || parsed.password !== "" || parsed.hostname === "") {
    throw invalid("url");
  }
  return url;
}

function optionalInt(field: string, value: number | null | undefined, max: number): number | null {
  if (value === undefined || value === null) return null;
  if (!Number.isInteger(value) || value < 1 || value > max) throw invalid(field);
  return value;
}

/** A fresh Standard Webhooks secret: `whsec_` + base64 of SECRET_BYTES random bytes. */
export function newSigningSecret(randomBytes: RandomBytes): string {
  return `whsec_${Buffer.from(randomBytes(SECRET_BYTES)).toString("base64")}`;
}

function checkSecret(secret: unknown): string {
  if (typeof secret !== "string" || !SECRET_PATTERN.test(secret)) throw invalid("secret");
  return secret;
}

/**
 * Registers an endpoint for `tenantId` with secret version 1. Returns the secret once
 * (the tenant configures its receiver with it). WEBHOOK_TENANT_NOT_FOUND, WEBHOOK_SUBSCRIPTION_INVALID.
 */
export async function createSubscription(
  db: Database,
  tenantId: string,
  input: NewSubscription,
  ctx: WriteContext,
): Promise<{ subscription: Subscription; secret: string }> {
  const url = checkEndpointUrl(input.url);
  const eventTypes = checkEventFilters(input.eventTypes);
  const rate = optionalInt("rateLimitPerS", input.rateLimitPerS, MAX_RATE_LIMIT_PER_S);
  const concurrency = optionalInt("maxConcurrency", input.maxConcurrency, MAX_CONCURRENCY);
  const path = parseOrderingKeyPath(input.orderingKeyPath);
  const secret = checkSecret(input.secret ?? newSigningSecret(ctx.randomBytes));
  const id = newId("sub", ctx.randomBytes);
  const now = new Date(ctx.nowMs);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<SubscriptionRow>(
      `INSERT INTO subscriptions (id, tenant_id, url, event_types, rate_limit_per_s, max_concurrency,
         ordering_key_path, created_at, updated_at)
       SELECT $1, t.id, $3, $4::text[], $5, $6, $7::text[], $8, $8 FROM tenants t WHERE t.id = $2
       RETURNING *`,
      [id, tenantId, url, eventTypes, rate, concurrency ?? DEFAULT_MAX_CONCURRENCY, path, now],
    );
    if (!rows[0]) throw storeErrors.create("WEBHOOK_TENANT_NOT_FOUND", { fields: { tenantId } });
    await tx.query(
      "INSERT INTO subscription_secrets (subscription_id, version, secret, created_at) VALUES ($1, 1, $2, $3)",
      [id, secret, now],
    );
    return { subscription: toSubscription(rows[0]), secret };
  });
}

/** The tenant's subscription `id`, or undefined (absent, or another tenant's). */
export async function getSubscription(
  q: Queryable,
  tenantId: string,
  id: string,
): Promise<Subscription | undefined> {
  if (!isId("sub", id)) return undefined;
  const { rows } = await q.query<SubscriptionRow>(
    "SELECT * FROM subscriptions WHERE id = $1 AND tenant_id = $2",
    [id, tenantId],
  );
  return rows[0] ? toSubscription(rows[0]) : undefined;
}

const LISTING = "subscriptions";

/** The tenant's subscriptions, oldest first, keyset-paged on (created_at, id). */
export async function listSubscriptions(
  q: Queryable,
  tenantId: string,
  request: PageRequest = {},
): Promise<Page<Subscription>> {
  const limit = pageLimit(request.limit, LISTING);
  const after =
    request.cursor === undefined
      ? null
      : decodeCursor(LISTING, request.cursor, ["number", "string"] as const);
  const { rows } = await q.query<SubscriptionRow>(
    `SELECT * FROM subscriptions
      WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::text))
      ORDER BY created_at, id LIMIT $4`,
    [tenantId, after ? new Date(after[0]) : null, after ? after[1] : null, limit + 1],
  );
  return toPage(rows, limit, toSubscription, (r) => encodeCursor(LISTING, [r.created_at.getTime(), r.id]));
}

/**
 * Enables or disables a subscription — the tenant's switch. Disabling needs a reason (shown
 * to the tenant) and sets status `disabled`; enabling sets `active` with a clean slate (a
 * quarantined endpoint the tenant fixed starts a new streak). Deliveries already queued are
 * not touched here: the worker re-checks just before sending and cancels them (WH-04).
 * Undefined when the tenant has no such subscription.
 */
export async function setSubscriptionActive(
  q: Queryable,
  tenantId: string,
  id: string,
  change: { active: boolean; reason?: string; nowMs: number },
): Promise<Subscription | undefined> {
  const reason = change.active ? null : (change.reason ?? "");
  if (reason !== null && (reason.trim() === "" || reason.length > MAX_REASON_CHARS)) throw invalid("reason");
  if (!isId("sub", id)) return undefined;
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE subscriptions
        SET active = $3, disabled_reason = $4, status = CASE WHEN $3 THEN 'active' ELSE 'disabled' END,
            status_reason = $4, failing_since = NULL, client_errors = 0, client_errors_since = NULL,
            updated_at = $5
      WHERE id = $1 AND tenant_id = $2 RETURNING *`,
    [id, tenantId, change.active, reason, new Date(change.nowMs)],
  );
  return rows[0] ? toSubscription(rows[0]) : undefined;
}

/**
 * A new secret version; older live secrets expire `overlapMs` later (0: now). The row
 * lock on the subscription queues concurrent rotations, so versions never collide, and the
 * bound on live secrets (`MAX_LIVE_SECRETS`: each one is an HMAC per attempt and a header
 * entry) is checked under that lock, so racing rotations cannot pass it together.
 */
export async function rotateSubscriptionSecret(
  db: Database,
  tenantId: string,
  id: string,
  ctx: WriteContext & { overlapMs: number; secret?: string },
): Promise<{ version: number; secret: string }> {
  if (!Number.isInteger(ctx.overlapMs) || ctx.overlapMs < 0 || ctx.overlapMs > MAX_SECRET_OVERLAP_MS)
    throw invalid("overlapMs");
  const secret = checkSecret(ctx.secret ?? newSigningSecret(ctx.randomBytes));
  if (!isId("sub", id)) throw notFound(id);
  const now = new Date(ctx.nowMs);
  return db.transaction(async (tx) => {
    const { rows } = await tx.query<{ secret_version: number }>(
      `UPDATE subscriptions SET secret_version = secret_version + 1, updated_at = $3
        WHERE id = $1 AND tenant_id = $2 RETURNING secret_version`,
      [id, tenantId, now],
    );
    if (!rows[0]) throw notFound(id);
    const version = rows[0].secret_version;
    const live = await liveSecrets(tx, id, ctx.nowMs);
    if (live.length >= MAX_LIVE_SECRETS) {
      throw deliveryErrors.create("WEBHOOK_SECRET_ROTATION_LIMIT", {
        fields: { liveSecrets: live.length, max: MAX_LIVE_SECRETS },
      });
    }
    const expiresAt = new Date(ctx.nowMs + ctx.overlapMs);
    await tx.query(
      `UPDATE subscription_secrets SET expires_at = $2
        WHERE subscription_id = $1 AND (expires_at IS NULL OR expires_at > $2)`,
      [id, expiresAt],
    );
    await tx.query(
      "INSERT INTO subscription_secrets (subscription_id, version, secret, created_at) VALUES ($1, $2, $3, $4)",
      [id, version, secret, now],
    );
    return { version, secret };
  });
}

/** A secret that signs at `nowMs`: the newest first, then those still inside their overlap. */
export interface SigningSecret {
  version: number;
  secret: string;
}

/** The subscription's live secrets at `nowMs`, newest first (the sender signs with all of them). */
export async function liveSecrets(
  q: Queryable,
  subscriptionId: string,
  nowMs: number,
): Promise<SigningSecret[]> {
  const { rows } = await q.query<SigningSecret>(
    `SELECT version, secret FROM subscription_secrets
      WHERE subscription_id = $1 AND (expires_at IS NULL OR expires_at > $2) ORDER BY version DESC`,
    [subscriptionId, new Date(nowMs)],
  );
  return rows;
}

export interface SubscriptionChange {
  url?: string;
  eventTypes?: string[] | null;
  rateLimitPerS?: number | null;
  maxConcurrency?: number;
  nowMs: number;
}

/**
 * Changes an endpoint's URL, filters or limits. Queued deliveries follow: the worker reads
 * the CURRENT url just before sending (send-check.ts); new filters apply to events
 * fanned out from now on. Undefined when the tenant has no such subscription.
 */
export async function updateSubscription(
  q: Queryable,
  tenantId: string,
  id: string,
  change: SubscriptionChange,
): Promise<Subscription | undefined> {
  const url = change.url === undefined ? null : checkEndpointUrl(change.url);
  const setTypes = change.eventTypes !== undefined;
  const eventTypes = setTypes ? checkEventFilters(change.eventTypes) : null;
  const setRate = change.rateLimitPerS !== undefined;
  const rate = optionalInt("rateLimitPerS", change.rateLimitPerS, MAX_RATE_LIMIT_PER_S);
  const concurrency = optionalInt("maxConcurrency", change.maxConcurrency, MAX_CONCURRENCY);
  if (!isId("sub", id)) return undefined;
  const { rows } = await q.query<SubscriptionRow>(
    `UPDATE subscriptions
        SET url = COALESCE($3, url),
            event_types = CASE WHEN $4 THEN $5::text[] ELSE event_types END,
            rate_limit_per_s = CASE WHEN $6 THEN $7::int4 ELSE rate_limit_per_s END,
            max_concurrency = COALESCE($8, max_concurrency), updated_at = $9
      WHERE id = $1 AND tenant_id = $2 RETURNING *`,
    [id, tenantId, url, setTypes, eventTypes, setRate, rate, concurrency, new Date(change.nowMs)],
  );
  return rows[0] ? toSubscription(rows[0]) : undefined;
}
