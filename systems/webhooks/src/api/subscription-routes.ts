/**
 * The subscription API (endpoints a tenant registers), every query scoped to the caller:
 *
 *   POST   /v1/subscriptions                    201, with the signing secret shown once
 *   GET    /v1/subscriptions                    keyset pages, oldest first
 *   GET    /v1/subscriptions/{id}
 *   PATCH  /v1/subscriptions/{id}               url, filters, limits, active (one transaction)
 *   DELETE /v1/subscriptions/{id}               204: disabled for good, history kept (see below)
 *   POST   /v1/subscriptions/{id}/rotate-secret a new secret; the old ones sign beside it for the overlap
 *
 * Another tenant's id answers 404 exactly like an id that does not exist (WH-12). Every
 * URL passes the SSRF policy on creation and update (loopback, private, link-local refused
 * unless the operator allowed them); the sender checks again on every attempt, where the
 * resolved address is known.
 *
 * DELETE disables rather than erases: deliveries and their attempts reference the
 * subscription and stay readable for their retention; the worker's re-check cancels what
 * was queued (WH-04). The subscription keeps answering GET with `active: false` and
 * `disabledReason: "deleted by the tenant"`.
 *
 * @example
 * registerSubscriptionRoutes(scope, { db, clock, randomBytes, tenantOf: auth.tenantOf, settings });
 */

import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import { commonErrors } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import { DEFAULT_OVERLAP_MS } from "../domain/secret-rotation.ts";
import { validateEndpointUrl } from "../domain/url-policy.ts";
import { storeErrors } from "../errors.ts";
import {
  createSubscription,
  getSubscription,
  listSubscriptions,
  type NewSubscription,
  rotateSubscriptionSecret,
  type Subscription,
  setSubscriptionActive,
  updateSubscription,
} from "../store/subscription-repository.ts";
import type { ApiContext } from "./api-context.ts";
import { idParams, iso, pageOf, pageQuery } from "./api-schemas.ts";
import { atField, withFieldPointers } from "./field-errors.ts";
import {
  rotateSecretBody,
  secretRotated,
  subscriptionCreateBody,
  subscriptionCreated,
  subscriptionPatchBody,
  subscriptionView,
} from "./subscription-schemas.ts";

const tags = ["subscriptions"];
export const DELETED_REASON = "deleted by the tenant";
export const DEFAULT_DISABLED_REASON = "disabled by the tenant";

interface PatchBody {
  url?: string;
  eventTypes?: string[] | null;
  rateLimitPerS?: number | null;
  maxConcurrency?: number;
  active?: boolean;
  disabledReason?: string;
}

export function toSubscriptionJson(s: Subscription) {
  return {
    id: s.id,
    url: s.url,
    eventTypes: s.eventTypes,
    active: s.active,
    disabledReason: s.disabledReason,
    status: s.status,
    statusReason: s.statusReason,
    failingSince: iso(s.failingSince),
    clientErrors: s.clientErrors,
    clientErrorsSince: iso(s.clientErrorsSince),
    secretVersion: s.secretVersion,
    rateLimitPerS: s.rateLimitPerS,
    maxConcurrency: s.maxConcurrency,
    orderingKeyPath: s.orderingKeyPath,
    createdAt: s.createdAt.toISOString(),
    updatedAt: s.updatedAt.toISOString(),
  };
}

function notFound(id: string): Error {
  return storeErrors.create("WEBHOOK_SUBSCRIPTION_NOT_FOUND", { fields: { id } });
}

/** The SSRF policy at registration: scheme, IP literals, `localhost` names (WEBHOOK_URL_*). */
function checkUrl(context: ApiContext, url: string): void {
  try {
    validateEndpointUrl(url, context.settings.urlPolicy);
  } catch (error) {
    throw atField(error, "/body/url");
  }
}

function checkReason(body: PatchBody): void {
  if (body.disabledReason !== undefined && body.active !== false) {
    const errors = [{ field: "/body/disabledReason", message: "is only accepted with active: false" }];
    throw commonErrors.create("REQUEST_INVALID", { fields: { errors } });
  }
}

/** PATCH: the changes and the switch in one transaction, so a bad field leaves nothing half-applied. */
async function patchSubscription(context: ApiContext, tenantId: string, id: string, body: PatchBody) {
  const nowMs = context.clock.nowMs();
  const { active, disabledReason, ...changes } = body;
  return withFieldPointers("/body", () =>
    context.db.transaction(async (tx) => {
      let current = await getSubscription(tx, tenantId, id);
      if (current && Object.keys(changes).length > 0) {
        current = await updateSubscription(tx, tenantId, id, { ...changes, nowMs });
      }
      if (current && active !== undefined) {
        const reason = active ? undefined : (disabledReason ?? DEFAULT_DISABLED_REASON);
        current = await setSubscriptionActive(tx, tenantId, id, {
          active,
          ...(reason === undefined ? {} : { reason }),
          nowMs,
        });
      }
      if (!current) throw notFound(id);
      return current;
    }),
  );
}

async function rotate(
  context: ApiContext,
  tenantId: string,
  id: string,
  body: { overlapMs?: number; secret?: string },
) {
  const nowMs = context.clock.nowMs();
  const overlapMs = body.overlapMs ?? DEFAULT_OVERLAP_MS;
  const rotated = await withFieldPointers("/body", () =>
    rotateSubscriptionSecret(context.db, tenantId, id, {
      nowMs,
      randomBytes: context.randomBytes,
      overlapMs,
      ...(body.secret === undefined ? {} : { secret: body.secret }),
    }),
  );
  return {
    subscriptionId: id,
    version: rotated.version,
    secret: rotated.secret,
    previousSecretsExpireAt: new Date(nowMs + overlapMs).toISOString(),
  };
}

function registerReads(app: FastifyInstance, context: ApiContext): void {
  app.get<{ Querystring: { limit?: number; cursor?: string } }>(
    "/v1/subscriptions",
    {
      schema: {
        errorCodes: ["WEBHOOK_CURSOR_INVALID"],
        summary: "Your subscriptions, oldest first (cursor pagination)",
        tags,
        security: bearerSecurity,
        querystring: pageQuery,
        response: { 200: pageOf(subscriptionView) },
      },
    },
    async (request) => {
      const page = await withFieldPointers("/querystring", () =>
        listSubscriptions(context.db, context.tenantOf(request), request.query),
      );
      return { items: page.items.map(toSubscriptionJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/v1/subscriptions/:id",
    {
      schema: {
        errorCodes: ["WEBHOOK_SUBSCRIPTION_NOT_FOUND"],
        summary: "One of your subscriptions",
        tags,
        security: bearerSecurity,
        params: idParams,
        response: { 200: subscriptionView },
      },
    },
    async (request) => {
      const found = await getSubscription(context.db, context.tenantOf(request), request.params.id);
      if (!found) throw notFound(request.params.id);
      return toSubscriptionJson(found);
    },
  );
}

function registerWrites(app: FastifyInstance, context: ApiContext): void {
  app.post<{ Body: NewSubscription }>(
    "/v1/subscriptions",
    {
      schema: {
        errorCodes: [
          "WEBHOOK_SUBSCRIPTION_INVALID",
          "WEBHOOK_URL_INVALID",
          "WEBHOOK_URL_INSECURE",
          "WEBHOOK_URL_FORBIDDEN",
          "WEBHOOK_SECRET_INVALID",
        ],
        summary: "Register an endpoint (the signing secret is returned once)",
        tags,
        security: bearerSecurity,
        body: subscriptionCreateBody,
        response: { 201: subscriptionCreated },
      },
    },
    async (request, reply) => {
      const tenantId = context.tenantOf(request);
      checkUrl(context, request.body.url);
      const ctx = { nowMs: context.clock.nowMs(), randomBytes: context.randomBytes };
      const { subscription, secret } = await withFieldPointers("/body", () =>
        createSubscription(context.db, tenantId, request.body, ctx),
      );
      return reply
        .code(201)
        .header("location", `/v1/subscriptions/${subscription.id}`)
        .send({ ...toSubscriptionJson(subscription), secret });
    },
  );

  app.patch<{ Params: { id: string }; Body: PatchBody }>(
    "/v1/subscriptions/:id",
    {
      schema: {
        errorCodes: [
          "WEBHOOK_SUBSCRIPTION_NOT_FOUND",
          "WEBHOOK_SUBSCRIPTION_INVALID",
          "WEBHOOK_URL_INVALID",
          "WEBHOOK_URL_INSECURE",
          "WEBHOOK_URL_FORBIDDEN",
        ],
        summary: "Change an endpoint's URL, filters, limits, or switch it off and on",
        tags,
        security: bearerSecurity,
        params: idParams,
        body: subscriptionPatchBody,
        response: { 200: subscriptionView },
      },
    },
    async (request) => {
      checkReason(request.body);
      if (request.body.url !== undefined) checkUrl(context, request.body.url);
      const tenantId = context.tenantOf(request);
      return toSubscriptionJson(await patchSubscription(context, tenantId, request.params.id, request.body));
    },
  );
}

function registerLifecycle(app: FastifyInstance, context: ApiContext): void {
  app.delete<{ Params: { id: string } }>(
    "/v1/subscriptions/:id",
    {
      schema: {
        errorCodes: ["WEBHOOK_SUBSCRIPTION_NOT_FOUND"],
        summary: "Stop an endpoint for good (its delivery history stays readable)",
        tags,
        security: bearerSecurity,
        params: idParams,
        response: { 204: { type: "null" } },
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      const change = { active: false, reason: DELETED_REASON, nowMs: context.clock.nowMs() };
      const done = await setSubscriptionActive(context.db, context.tenantOf(request), id, change);
      if (!done) throw notFound(id);
      return reply.code(204).send();
    },
  );

  app.post<{ Params: { id: string }; Body: { overlapMs?: number; secret?: string } }>(
    "/v1/subscriptions/:id/rotate-secret",
    {
      // Every field is optional, so a bare `POST` (no body at all) means "defaults".
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        errorCodes: [
          "WEBHOOK_SUBSCRIPTION_NOT_FOUND",
          "WEBHOOK_SECRET_INVALID",
          "WEBHOOK_SECRET_ROTATION_LIMIT",
        ],
        summary: "Rotate the signing secret; old and new both sign during the overlap",
        tags,
        security: bearerSecurity,
        params: idParams,
        body: rotateSecretBody,
        response: { 200: secretRotated },
      },
    },
    async (request) => rotate(context, context.tenantOf(request), request.params.id, request.body),
  );
}

export function registerSubscriptionRoutes(app: FastifyInstance, context: ApiContext): void {
  registerReads(app, context);
  registerWrites(app, context);
  registerLifecycle(app, context);
}
