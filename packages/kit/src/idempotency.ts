/**
 * Stripe-style idempotency keys, the pure half (payments' PY-01…PY-04, PY-13, PY-18): the
 * request fingerprint, the state machine that decides what a request meets when its key
 * already exists, and the error codes of the store. The store
 * (`@casebook/infra/sql/idempotency-store`) does the one conditional write and asks
 * `decideExisting` what to do next; the key rule itself is `./idempotency-key.ts`.
 *
 * States of a key, scoped per caller (a merchant, a tenant):
 *
 *   (absent) ──begin──▶ in_progress(recovery point, locked_at) ──complete──▶ completed(response)
 *                          │  ▲ advance(step): a step committed with its writes
 *                          │  └─ take over: lease expired or released, compare-and-set
 *                          └─release──▶ absent (nothing done yet) | unlocked (resume from its point)
 *
 * Expired entries (older than `retentionS`) read as absent and are pruned in batches.
 *
 * @example
 * const fingerprint = fingerprintRequest({ method: "POST", path: "/payments", body: request.body });
 * decideExisting(entry, { fingerprint, nowMs }, { leaseMs: 60_000, retentionMs: 86_400_000 });
 * // → { kind: "replay", response } | { kind: "in_progress", retryAfterMs } | { kind: "mismatch", parts } | …
 */
import { hash } from "node:crypto";
import { defineErrors, type ErrorRegistry } from "./errors.ts";
import { IDEMPOTENCY_KEY_MAX_CHARS, idempotencyKeyProblem } from "./idempotency-key.ts";

/** The one rule's bound (./idempotency-key.ts): Stripe's. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = IDEMPOTENCY_KEY_MAX_CHARS;
/** A scope (merchant, tenant) comes from authentication, not from input; the bound is an assertion. */
export const SCOPE_MAX_LENGTH = 255;
/** PY-04: keys live at least 24 h (Stripe prunes after 24 h). */
export const DEFAULT_RETENTION_S = 86_400;
/** A claim whose owner has not been heard from for this long may be taken over (crashed owner). */
export const DEFAULT_LEASE_S = 60;
/** Bound on a stored response body: replays are kept for a day, per key. */
export const RESPONSE_BODY_MAX_BYTES = 256 * 1024;
/** Bound on nesting when canonicalizing a body, so a hostile body cannot blow the stack. */
export const CANONICAL_MAX_DEPTH = 64;
/** Headers worth replaying: they describe the stored body or the created resource. */
export const DEFAULT_REPLAY_HEADERS: readonly string[] = ["content-type", "location"];

/** The recovery point of a fresh claim: nothing of the request has committed yet. */
export const RECOVERY_STARTED = "started";
/** The recovery point of a completed key; only `complete` reaches it. */
export const RECOVERY_FINISHED = "finished";

const STEP_PATTERN = /^[a-z][a-z0-9_]{0,62}$/;
const METHOD_PATTERN = /^[A-Z]{1,16}$/;
const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;
const HEADER_NAME_PATTERN = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

export type IdempotencyStatus = "in_progress" | "completed";

/** What identifies "the same request": a retry must match all three. */
export interface RequestFingerprint {
  /** Upper-case HTTP method. */
  method: string;
  /** The path as routed, including a query string if the endpoint reads one. */
  path: string;
  /** sha256 (hex) of the canonical JSON body (`canonicalJson`), "" body for none. */
  bodySha256: string;
}

export type FingerprintPart = "method" | "path" | "body";

/** A response kept for replay: status, selected headers (lower-case names) and the exact body bytes. */
export interface StoredResponse {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: Uint8Array;
}

/** A key's row as the store read it, times in epoch ms. */
export interface ExistingEntry {
  fingerprint: RequestFingerprint;
  status: IdempotencyStatus;
  recoveryPoint: string;
  /** Null once completed, or after `release` unlocked it for a retry to resume. */
  lockedAtMs: number | null;
  createdAtMs: number;
  /** Present exactly when `status` is "completed". */
  response: StoredResponse | undefined;
}

export interface IdempotencyPolicy {
  leaseMs: number;
  retentionMs: number;
}

export type ExistingDecision =
  | { kind: "expired" }
  | { kind: "mismatch"; parts: FingerprintPart[] }
  | { kind: "replay"; response: StoredResponse }
  | { kind: "in_progress"; retryAfterMs: number }
  | { kind: "take_over"; recoveryPoint: string };

/** What can go wrong with a key; each system's codes are `<AREA>_IDEMPOTENCY_<kind>`. */
export type IdempotencyErrorKind =
  | "KEY_INVALID"
  | "IN_PROGRESS"
  | "MISMATCH"
  | "LOCK_LOST"
  | "RESPONSE_TOO_LARGE";
export type IdempotencyErrorCode<Area extends string> = `${Area}_IDEMPOTENCY_${IdempotencyErrorKind}`;

/** A system's idempotency errors: its registry, and `create` by kind for the shared store. */
export interface IdempotencyErrors<Area extends string = string> {
  readonly registry: ErrorRegistry<IdempotencyErrorCode<Area>>;
  create(kind: IdempotencyErrorKind, options?: Parameters<ErrorRegistry<string>["create"]>[1]): Error;
  is(error: unknown, kind: IdempotencyErrorKind): boolean;
}

const DEFAULT_MESSAGES: Readonly<Record<IdempotencyErrorKind, { status: number; message: string }>> = {
  KEY_INVALID: {
    status: 400,
    message:
      "The Idempotency-Key header must be 1 to 255 visible ASCII characters; send a fresh UUID per operation and reuse it on every retry.",
  },
  IN_PROGRESS: {
    status: 409,
    message:
      "A request with this Idempotency-Key is still being processed; retry after `retryAfterMs` to get its result.",
  },
  MISMATCH: {
    status: 422,
    message:
      "This Idempotency-Key was already used with different parameters (see `mismatch`); reuse a key only to retry the identical request.",
  },
  LOCK_LOST: {
    status: 409,
    message:
      "This request's claim on its Idempotency-Key expired and a retry took it over; its writes were rolled back. Retry with the same key to get the result.",
  },
  RESPONSE_TOO_LARGE: {
    status: 500,
    message:
      "The response is too large to store for replay; this is a bug in the endpoint, not in the request.",
  },
};

/**
 * The idempotency error registry of a system (`PAYMENTS_IDEMPOTENCY_IN_PROGRESS`, …), with the
 * statuses every system shares (400, 409, 422, 409, 500) and messages it may reword.
 *
 * @example
 * export const idempotency = defineIdempotencyErrors("PAYMENTS");
 * throw idempotency.create("IN_PROGRESS", { fields: { retryAfterMs: 1_000 } }); // PAYMENTS_IDEMPOTENCY_IN_PROGRESS
 */
export function defineIdempotencyErrors<const Area extends string>(
  area: Area,
  messages: Partial<Record<IdempotencyErrorKind, string>> = {},
): IdempotencyErrors<Area> {
  const code = (kind: IdempotencyErrorKind) => `${area}_IDEMPOTENCY_${kind}` as IdempotencyErrorCode<Area>;
  const specs = {} as Record<IdempotencyErrorCode<Area>, { status: number; message: string }>;
  for (const [kind, spec] of Object.entries(DEFAULT_MESSAGES) as [
    IdempotencyErrorKind,
    { status: number; message: string },
  ][]) {
    specs[code(kind)] = { status: spec.status, message: messages[kind] ?? spec.message };
  }
  const registry = defineErrors(specs);
  return {
    registry,
    create: (kind, options) => registry.create(code(kind), options),
    is: (error, kind) => registry.is(error, code(kind)),
  };
}

/**
 * The Idempotency-Key, checked by the one rule (./idempotency-key.ts: 1..255 visible ASCII
 * characters, so a proxy that trims or folds whitespace cannot turn one key into two).
 * Throws `<AREA>_IDEMPOTENCY_KEY_INVALID` naming the reason; call it BEFORE `begin`, so an
 * invalid request stores nothing.
 *
 * @example
 * validateIdempotencyKey("3f1c2a8e-6b1d-4c55-9d1e-2f3a4b5c6d7e", errors); // returns it
 */
export function validateIdempotencyKey(raw: unknown, errors: IdempotencyErrors): string {
  const problem = idempotencyKeyProblem(raw);
  if (problem !== undefined) {
    throw errors.create("KEY_INVALID", { fields: { field: "Idempotency-Key", reason: problem } });
  }
  return raw as string;
}

/** Asserts a scope id (it comes from authentication: a bad one is a bug, not bad input). */
export function checkScope(scope: string): string {
  if (scope.length === 0 || scope.length > SCOPE_MAX_LENGTH) {
    throw new RangeError(`an idempotency scope must be 1..${SCOPE_MAX_LENGTH} characters`);
  }
  return scope;
}

/**
 * JSON with object keys sorted and no whitespace, so `{"a":1,"b":2}` and
 * `{ "b": 2, "a": 1 }` fingerprint the same while `[1,2]` and `[2,1]` do not.
 * Properties whose value is undefined are left out, as JSON.stringify does.
 *
 * @example
 * canonicalJson({ b: [2, 1], a: { d: null, c: "x" } }); // '{"a":{"c":"x","d":null},"b":[2,1]}'
 */
export function canonicalJson(value: unknown): string {
  return canonical(value, 0);
}

function canonical(value: unknown, depth: number): string {
  if (depth > CANONICAL_MAX_DEPTH)
    throw new RangeError(`body nests deeper than ${CANONICAL_MAX_DEPTH} levels`);
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("a JSON body cannot hold a non-finite number");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonical(item, depth + 1)).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, item]) => `${JSON.stringify(k)}:${canonical(item, depth + 1)}`).join(",")}}`;
  }
  throw new TypeError(`a JSON body cannot hold a ${typeof value}`);
}

function sha256Hex(text: string): string {
  return hash("sha256", text, "hex");
}

/**
 * The fingerprint of a request: method, path and the hash of its canonical body.
 * A body of `undefined` (no body) hashes the empty string, distinct from `null`.
 *
 * @example
 * fingerprintRequest({ method: "post", path: "/payments", body: { amount: "5000", currency: "BRL" } });
 */
export function fingerprintRequest(request: {
  method: string;
  path: string;
  body?: unknown;
}): RequestFingerprint {
  const method = request.method.toUpperCase();
  if (!METHOD_PATTERN.test(method)) throw new TypeError(`not an HTTP method: ${request.method}`);
  if (!request.path.startsWith("/")) throw new TypeError(`a request path starts with "/": ${request.path}`);
  const body = request.body === undefined ? "" : canonicalJson(request.body);
  return { method, path: request.path, bodySha256: sha256Hex(body) };
}

/** One hex digest of the whole fingerprint, for logs and correlation. */
export function fingerprintDigest(fingerprint: RequestFingerprint): string {
  return sha256Hex(`${fingerprint.method}\n${fingerprint.path}\n${fingerprint.bodySha256}`);
}

/** Asserts a fingerprint is well formed before it is stored. */
export function checkFingerprint(fingerprint: RequestFingerprint): RequestFingerprint {
  if (!METHOD_PATTERN.test(fingerprint.method))
    throw new TypeError(`bad fingerprint method ${fingerprint.method}`);
  if (!fingerprint.path.startsWith("/")) throw new TypeError(`bad fingerprint path ${fingerprint.path}`);
  if (!SHA256_HEX_PATTERN.test(fingerprint.bodySha256)) throw new TypeError("bad fingerprint body hash");
  return fingerprint;
}

/** Which parts differ between the stored request and a retry; empty when it is the same request. */
export function mismatchedParts(stored: RequestFingerprint, incoming: RequestFingerprint): FingerprintPart[] {
  const parts: FingerprintPart[] = [];
  if (stored.method !== incoming.method) parts.push("method");
  if (stored.path !== incoming.path) parts.push("path");
  if (stored.bodySha256 !== incoming.bodySha256) parts.push("body");
  return parts;
}

/** PY-04: an entry created `retentionMs` ago or earlier reads as absent. */
export function isExpired(createdAtMs: number, nowMs: number, retentionMs: number): boolean {
  return createdAtMs + retentionMs <= nowMs;
}

/**
 * What a request meets when its key already exists, in Stripe's order: an expired
 * entry counts as absent; different parameters are an error even while the first
 * request runs; a completed key replays its response; a live claim answers
 * IN_PROGRESS; a claim whose lease ran out (owner crashed) or that was released may
 * be taken over, resuming from its recovery point.
 */
export function decideExisting(
  entry: ExistingEntry,
  incoming: { fingerprint: RequestFingerprint; nowMs: number },
  policy: IdempotencyPolicy,
): ExistingDecision {
  if (isExpired(entry.createdAtMs, incoming.nowMs, policy.retentionMs)) return { kind: "expired" };
  const parts = mismatchedParts(entry.fingerprint, incoming.fingerprint);
  if (parts.length > 0) return { kind: "mismatch", parts };
  if (entry.status === "completed") {
    if (entry.response === undefined) throw new Error("invariant: a completed key has a stored response");
    return { kind: "replay", response: entry.response };
  }
  if (entry.lockedAtMs !== null) {
    const leaseEndMs = entry.lockedAtMs + policy.leaseMs;
    if (incoming.nowMs < leaseEndMs)
      return { kind: "in_progress", retryAfterMs: leaseEndMs - incoming.nowMs };
  }
  return { kind: "take_over", recoveryPoint: entry.recoveryPoint };
}

/**
 * Asserts a saga step may be recorded after `from`: a step is a lower-case name,
 * neither the start nor the finish (only `begin` and `complete` set those), and a
 * finished key takes no more steps.
 */
export function checkAdvance(from: string, to: string): string {
  if (!STEP_PATTERN.test(to))
    throw new TypeError(`recovery point ${JSON.stringify(to)} must match ${STEP_PATTERN}`);
  if (to === RECOVERY_STARTED || to === RECOVERY_FINISHED) {
    throw new RangeError(`advance() cannot set "${to}": begin() starts and complete() finishes a key`);
  }
  if (from === RECOVERY_FINISHED) throw new RangeError("a finished key takes no more steps");
  return to;
}

/**
 * The headers to store with a response: only those named in `allowed`, names
 * lower-cased, so a replay does not resend per-attempt headers (request id, date).
 *
 * @example
 * selectReplayHeaders({ "Content-Type": "application/json", "X-Request-Id": "r1" }); // { "content-type": "application/json" }
 */
export function selectReplayHeaders(
  headers: Readonly<Record<string, string | undefined>>,
  allowed: readonly string[] = DEFAULT_REPLAY_HEADERS,
): Record<string, string> {
  const wanted = new Set(allowed.map((name) => name.toLowerCase()));
  const selected: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value !== undefined && wanted.has(lower)) selected[lower] = value;
  }
  return selected;
}

/** Asserts a response can be stored: an HTTP status, lower-case header names, a bounded body. */
export function checkStoredResponse(response: StoredResponse, errors: IdempotencyErrors): StoredResponse {
  if (!Number.isInteger(response.status) || response.status < 100 || response.status > 599) {
    throw new RangeError(`not an HTTP status: ${response.status}`);
  }
  for (const [name, value] of Object.entries(response.headers)) {
    if (!HEADER_NAME_PATTERN.test(name)) throw new TypeError(`header name ${name} must be lower-case token`);
    if (typeof value !== "string") throw new TypeError(`header ${name} must be a string`);
  }
  if (response.body.byteLength > RESPONSE_BODY_MAX_BYTES) {
    throw errors.create("RESPONSE_TOO_LARGE", {
      fields: { bodyBytes: response.body.byteLength, maxBytes: RESPONSE_BODY_MAX_BYTES },
    });
  }
  return response;
}
