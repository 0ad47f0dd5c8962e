/**
 * JSON schemas of the subscription API. The shapes mirror the store's checks
 * (store/subscription-repository.ts, domain/store-event-type.ts) so most mistakes come back
 * as REQUEST_INVALID naming `/body/<field>` before anything is written; the store checks
 * again, and the SSRF policy (domain/url-policy.ts) runs on `url` in the route.
 *
 * @example
 * app.post("/v1/subscriptions", { schema: { body: subscriptionCreateBody, response: { 201: subscriptionCreated } } }, h);
 */

import { SUBSCRIPTION_STATUSES } from "../domain/endpoint-health.ts";
import { MAX_EVENT_FILTERS, MAX_EVENT_TYPE_CHARS } from "../domain/store-event-type.ts";
import {
  MAX_CONCURRENCY,
  MAX_RATE_LIMIT_PER_S,
  MAX_REASON_CHARS,
  MAX_SECRET_OVERLAP_MS,
  MAX_URL_CHARS,
} from "../store/subscription-repository.ts";
import { instant, nullableInstant, nullableInt, nullableString } from "./api-schemas.ts";

/** `invoice.paid`, `invoice.*` or `*`. */
export const EVENT_FILTER_PATTERN = "^(\\*|[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*(\\.\\*)?)$";
/** Standard Webhooks secret: `whsec_` + base64 of 24..64 bytes. */
export const SECRET_PATTERN = "^whsec_[A-Za-z0-9+/]{32,88}={0,2}$";
/** Dotted payload path, up to 8 segments of [A-Za-z0-9_-]{1,64}. */
export const ORDERING_PATH_PATTERN = "^[A-Za-z0-9_-]{1,64}(\\.[A-Za-z0-9_-]{1,64}){0,7}$";

const url = {
  type: "string",
  minLength: 8,
  maxLength: MAX_URL_CHARS,
  description: "https endpoint; loopback, private and link-local addresses are refused (SSRF)",
} as const;
const eventTypes = {
  type: ["array", "null"],
  minItems: 1,
  maxItems: MAX_EVENT_FILTERS,
  items: { type: "string", maxLength: MAX_EVENT_TYPE_CHARS, pattern: EVENT_FILTER_PATTERN },
  description: "Filters (`invoice.paid`, `invoice.*`, `*`); null or absent: every type",
} as const;
const rateLimitPerS = {
  type: ["integer", "null"],
  minimum: 1,
  maximum: MAX_RATE_LIMIT_PER_S,
  description: "Most attempts per second to this endpoint; null: unlimited",
} as const;
const maxConcurrency = {
  type: "integer",
  minimum: 1,
  maximum: MAX_CONCURRENCY,
  description: "Most attempts in flight at once to this endpoint",
} as const;

export const subscriptionCreateBody = {
  type: "object",
  required: ["url"],
  additionalProperties: false,
  properties: {
    url,
    eventTypes,
    rateLimitPerS,
    maxConcurrency,
    orderingKeyPath: {
      type: ["string", "null"],
      pattern: ORDERING_PATH_PATTERN,
      description:
        "WH-03 opt-in: payload path (`data.object.id`) whose value orders deliveries, one at a time per value",
    },
    secret: {
      type: "string",
      pattern: SECRET_PATTERN,
      description: "Your own signing secret; absent: a fresh random one, returned once",
    },
  },
} as const;

export const subscriptionPatchBody = {
  type: "object",
  minProperties: 1,
  additionalProperties: false,
  properties: {
    url,
    eventTypes,
    rateLimitPerS,
    maxConcurrency,
    active: { type: "boolean", description: "false stops deliveries; queued ones are cancelled (WH-04)" },
    disabledReason: {
      type: "string",
      minLength: 1,
      maxLength: MAX_REASON_CHARS,
      description: "Why, when setting active: false",
    },
  },
} as const;

export const rotateSecretBody = {
  type: "object",
  additionalProperties: false,
  properties: {
    overlapMs: {
      type: "integer",
      minimum: 0,
      maximum: MAX_SECRET_OVERLAP_MS,
      description: "How long the previous secrets keep signing beside the new one (default 24 h)",
    },
    secret: { type: "string", pattern: SECRET_PATTERN, description: "The new secret; absent: a random one" },
  },
} as const;

export const subscriptionView = {
  type: "object",
  required: [
    "id",
    "url",
    "eventTypes",
    "active",
    "disabledReason",
    "status",
    "statusReason",
    "failingSince",
    "clientErrors",
    "clientErrorsSince",
    "secretVersion",
    "rateLimitPerS",
    "maxConcurrency",
    "orderingKeyPath",
    "createdAt",
    "updatedAt",
  ],
  properties: {
    id: { type: "string" },
    url: { type: "string" },
    eventTypes: { type: ["array", "null"], items: { type: "string" } },
    active: { type: "boolean" },
    disabledReason: nullableString,
    status: {
      type: "string",
      enum: SUBSCRIPTION_STATUSES,
      description:
        "active; failing (the last attempt failed, still retried for the whole window); quarantined (client errors persisted: ≥ 5 in a row over ≥ 1 h); disabled (410 Gone or the tenant). Quarantine and 410 also send a `webhook.subscription.quarantined` / `.disabled` event",
    },
    statusReason: { ...nullableString, description: "Why the current status; null when active" },
    failingSince: { ...nullableInstant, description: "First failure of the current failing run" },
    clientErrors: { type: "integer", description: "Client errors (3xx, 4xx, refused address) in a row" },
    clientErrorsSince: { ...nullableInstant, description: "When the first of those client errors arrived" },
    secretVersion: { type: "integer" },
    rateLimitPerS: nullableInt,
    maxConcurrency: { type: "integer" },
    orderingKeyPath: nullableString,
    createdAt: instant,
    updatedAt: instant,
  },
} as const;

export const subscriptionCreated = {
  type: "object",
  required: [...subscriptionView.required, "secret"],
  properties: {
    ...subscriptionView.properties,
    secret: { type: "string", description: "The signing secret: shown now, never again" },
  },
} as const;

export const secretRotated = {
  type: "object",
  required: ["subscriptionId", "version", "secret", "previousSecretsExpireAt"],
  properties: {
    subscriptionId: { type: "string" },
    version: { type: "integer" },
    secret: { type: "string", description: "The new signing secret: shown now, never again" },
    previousSecretsExpireAt: {
      ...instant,
      description: "Until then deliveries carry one signature per live secret (old and new)",
    },
  },
} as const;
