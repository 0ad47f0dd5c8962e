/**
 * The links API, every route scoped to the workspace of the API key (another workspace's link
 * reads as 404):
 *
 *   POST   /v1/links                  201: a link (generated code, or `alias`); with an Idempotency-Key,
 *                                     every retry gets the first answer back and no second link
 *   GET    /v1/links                  newest first, `limit` per page, `cursor` for the next, `tag` filter
 *   GET    /v1/links/{domain}/{code}  one link
 *   PATCH  /v1/links/{domain}/{code}  target, status, cache lifetime, query forwarding, tags, expiry;
 *                                     `warnings` when a permanent (301/308) link's target changes
 *   DELETE /v1/links/{domain}/{code}  204
 *
 * @example
 * registerLinkRoutes(scope, context, auth.principalOf);
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import { idempotencyKeyHeaders, sendStoredResponse } from "@casebook/infra/http/idempotency-key";
import { fingerprintRequest, type StoredResponse } from "@casebook/kit/idempotency";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { checkExpiry, checkTags, checkTarget, isPermanent } from "../domain/link-rules.ts";
import { errors } from "../errors.ts";
import { type LinkPatch, LinkRepository } from "../store/link-repository.ts";
import { type LinksContext, toLinkJson } from "./api-context.ts";
import { type Caller, createLink, insertLink, prepareLink } from "./create-link.ts";
import {
  type CreateLinkBody,
  createLinkBody,
  linkPage,
  linkParams,
  linkView,
  listQuery,
  type PatchLinkBody,
  patchedLinkView,
  patchLinkBody,
  tags,
} from "./link-schemas.ts";
import { decodeCursor, encodeCursor } from "./list-cursor.ts";

type LinkParams = { domain: string; code: string };
const auth = { security: bearerSecurity } as const;

export const PERMANENT_TARGET_WARNING =
  "This link answers a permanent redirect (301/308): browsers and caches that stored it keep sending people to the old target and will not see this change.";

function notFound(params: LinkParams): Error {
  return errors.create("LINK_NOT_FOUND", { fields: { domain: params.domain, code: params.code } });
}

/**
 * POST /v1/links with an Idempotency-Key (infra's shared store, Stripe's rules): the key is
 * claimed first (a retry of a finished create replays its 201 byte for byte; one still running
 * is 409; another body with the key is 422); the checks, the limit and the verifier run, then
 * the link's insert and the stored response commit in ONE transaction — a crash in between
 * leaves neither. A refusal (400/409/422/429) or a failure releases the key: nothing was
 * stored, a retry starts afresh.
 */
async function createIdempotently(
  context: LinksContext,
  caller: Caller,
  body: CreateLinkBody,
  key: string,
  reply: FastifyReply,
): Promise<FastifyReply> {
  const fingerprint = fingerprintRequest({ method: "POST", path: "/v1/links", body });
  const begun = await context.idempotency.begin({ scope: caller.workspaceId, key, fingerprint });
  if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
  const { lease } = begun;
  try {
    const prepared = await prepareLink(context, caller, body);
    const response = await context.db.transaction(async (tx) => {
      const link = await insertLink(context, new LinkRepository(tx), prepared);
      const stored: StoredResponse = {
        status: 201,
        headers: { "content-type": "application/json; charset=utf-8" },
        body: Buffer.from(JSON.stringify(toLinkJson(link, context.domains))),
      };
      await context.idempotency.complete(tx, lease, stored);
      return stored;
    });
    return sendStoredResponse(reply, response);
  } catch (error) {
    await context.idempotency.release(context.db, lease).catch(() => false);
    throw error;
  }
}

function patchOf(body: PatchLinkBody, nowMs: number): LinkPatch {
  return {
    ...(body.url === undefined ? {} : { target: checkTarget(body.url).href }),
    ...(body.status === undefined ? {} : { status: body.status }),
    ...(body.cacheMaxAgeS === undefined ? {} : { cacheMaxAgeS: body.cacheMaxAgeS }),
    ...(body.forwardQuery === undefined ? {} : { forwardQuery: body.forwardQuery }),
    ...(body.tags === undefined ? {} : { tags: checkTags(body.tags) }),
    ...(body.expiresAt === undefined
      ? {}
      : { expiresAt: body.expiresAt === null ? null : checkExpiry(body.expiresAt, nowMs) }),
  };
}

export function registerLinkRoutes(
  app: FastifyInstance,
  context: LinksContext,
  callerOf: (request: FastifyRequest) => Caller,
): void {
  const { links, domains, clock } = context;
  const errorCodes = ["LINK_INVALID", "LINK_NOT_FOUND"];

  app.post<{ Body: CreateLinkBody }>(
    "/v1/links",
    {
      schema: {
        summary: "Shorten a URL: a generated code, or a custom alias",
        tags,
        ...auth,
        errorCodes: [
          "LINK_INVALID",
          "LINK_ALIAS_TAKEN",
          "LINK_TARGET_BLOCKED",
          "LINK_CREATE_RATE_LIMITED",
          "URL_SHORTENER_IDEMPOTENCY_IN_PROGRESS",
          "URL_SHORTENER_IDEMPOTENCY_MISMATCH",
        ],
        headers: {
          type: "object",
          properties: {
            ...idempotencyKeyHeaders(
              "Optional. The same key on every retry of one create: the first link comes back, no second one is made",
            ),
          },
        },
        body: createLinkBody,
        response: { 201: linkView },
      },
    },
    async (request, reply) => {
      const key = request.headers["idempotency-key"];
      if (typeof key === "string")
        return createIdempotently(context, callerOf(request), request.body, key, reply);
      const link = await createLink(context, callerOf(request), request.body);
      return reply.code(201).send(toLinkJson(link, domains));
    },
  );

  app.get<{ Querystring: { tag?: string; limit: number; cursor?: string } }>(
    "/v1/links",
    {
      schema: {
        summary: "List the workspace's links, newest first, a page at a time",
        tags,
        ...auth,
        errorCodes: ["LINK_CURSOR_INVALID"],
        querystring: listQuery,
        response: { 200: linkPage },
      },
    },
    async (request) => {
      const { tag, limit, cursor } = request.query;
      const after = cursor === undefined ? undefined : decodeCursor(cursor);
      // One extra row says whether there is a next page without a count query.
      const rows = await links.list(callerOf(request).workspaceId, { tag, limit: limit + 1, after });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      return {
        links: page.map((link) => toLinkJson(link, domains)),
        nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
      };
    },
  );

  app.get<{ Params: LinkParams }>(
    "/v1/links/:domain/:code",
    {
      schema: {
        summary: "One link",
        tags,
        ...auth,
        errorCodes,
        params: linkParams,
        response: { 200: linkView },
      },
    },
    async (request) => {
      const { domain, code } = request.params;
      const link = await links.get(callerOf(request).workspaceId, domain.toLowerCase(), code);
      if (!link) throw notFound(request.params);
      return toLinkJson(link, domains);
    },
  );

  app.patch<{ Params: LinkParams; Body: PatchLinkBody }>(
    "/v1/links/:domain/:code",
    {
      schema: {
        summary: "Change a link's target, status, cache lifetime, query forwarding, tags or expiry",
        tags,
        ...auth,
        errorCodes,
        params: linkParams,
        body: patchLinkBody,
        response: { 200: patchedLinkView },
      },
    },
    async (request) => {
      const domain = request.params.domain.toLowerCase();
      const { code } = request.params;
      const nowMs = clock.nowMs();
      const changed = await links.update(
        callerOf(request).workspaceId,
        domain,
        code,
        patchOf(request.body, nowMs),
        nowMs,
      );
      if (!changed) throw notFound(request.params);
      await context.reader.forget(domain, code);
      const warnings =
        changed.before.target !== changed.after.target && isPermanent(changed.before.status)
          ? [PERMANENT_TARGET_WARNING]
          : [];
      return { link: toLinkJson(changed.after, domains), warnings };
    },
  );

  app.delete<{ Params: LinkParams }>(
    "/v1/links/:domain/:code",
    {
      schema: {
        summary: "Delete a link: its code then answers 404",
        tags,
        ...auth,
        errorCodes,
        params: linkParams,
        response: { 204: { type: "null" } },
      },
    },
    async (request, reply) => {
      const domain = request.params.domain.toLowerCase();
      const { code } = request.params;
      if (!(await links.remove(callerOf(request).workspaceId, domain, code))) throw notFound(request.params);
      await context.reader.forget(domain, code);
      return reply.code(204).send();
    },
  );
}
