/**
 * The operator's API, behind URL_SHORTENER_ADMIN_TOKEN (infra's `createStaticTokenAuth`),
 * registered only when a token is configured:
 *
 *   POST /v1/admin/workspaces                           201: a workspace and its first API key (shown once)
 *   GET|POST /v1/admin/workspaces/{id}/api-keys[...]    infra's api-key-admin-routes (list, issue, rotate, revoke)
 *   POST /v1/admin/links/{domain}/{code}/disable        the link answers 410 from now on, kept, not deleted (US-16)
 *   POST /v1/admin/links/{domain}/{code}/enable         it redirects again
 *   GET  /v1/admin/orphan-visits?from&to                visits of no link, by domain and kind (Shlink's
 *                                                       orphan visits: base domain, unknown code, gone)
 *
 * `casebook url-shortener new-key` (src/tools/new-key.ts) calls these over HTTP.
 *
 * @example
 * await registerAdminApi(app, { db, links, reader, clock, randomBytes, adminToken });
 */
import { issuedApiKeyView, registerApiKeyAdminRoutes } from "@casebook/infra/http/api-key-admin-routes";
import { bearerSecurity, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { Database } from "@casebook/infra/sql/sql";
import type { RandomBytes } from "@casebook/kit/api-key";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import type { ClickStore } from "../store/click-store.ts";
import type { LinkRepository } from "../store/link-repository.ts";
import {
  createWorkspaceIfAbsent,
  MAX_WORKSPACE_NAME_CHARS,
  workspaceKeys,
} from "../store/workspace-repository.ts";
import { rangeOf } from "./analytics-routes.ts";
import type { ReadPath } from "./api-context.ts";
import { linkParams } from "./link-schemas.ts";

export interface AdminOptions {
  db: Database;
  /** The click log (its orphan visits): its own database on PGlite (store/click-database.ts). */
  clicks: ClickStore;
  links: LinkRepository;
  reader: ReadPath;
  clock: Clock;
  randomBytes: RandomBytes;
  adminToken: string;
}

const tags = ["admin"];

const createWorkspaceBody = {
  type: "object",
  required: ["id", "name"],
  additionalProperties: false,
  properties: {
    id: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}$" },
    name: { type: "string", minLength: 1, maxLength: MAX_WORKSPACE_NAME_CHARS },
  },
} as const;

const createdWorkspaceView = {
  type: "object",
  required: ["workspace", "apiKey"],
  properties: {
    workspace: {
      type: "object",
      required: ["id", "name", "createdAt"],
      properties: {
        id: { type: "string" },
        name: { type: "string" },
        createdAt: { type: "string", format: "date-time" },
      },
    },
    apiKey: issuedApiKeyView,
  },
} as const;

const disableBody = {
  type: ["object", "null"],
  additionalProperties: false,
  properties: { reason: { type: "string", minLength: 1, maxLength: 500 } },
} as const;

const switchedView = {
  type: "object",
  required: ["domain", "code", "disabled"],
  properties: { domain: { type: "string" }, code: { type: "string" }, disabled: { type: "boolean" } },
} as const;

function registerWorkspaceRoutes(app: FastifyInstance, options: AdminOptions): void {
  app.post<{ Body: { id: string; name: string } }>(
    "/v1/admin/workspaces",
    {
      schema: {
        summary: "Create a workspace and its first API key (shown once)",
        tags,
        security: bearerSecurity,
        errorCodes: ["WORKSPACE_EXISTS", "WORKSPACE_INVALID"],
        body: createWorkspaceBody,
        response: { 201: createdWorkspaceView },
      },
    },
    async (request, reply) => {
      const created = await createWorkspaceIfAbsent(options.db, request.body, {
        nowMs: options.clock.nowMs(),
        randomBytes: options.randomBytes,
      });
      if (!created) throw errors.create("WORKSPACE_EXISTS", { fields: { id: request.body.id } });
      const { workspace, apiKey } = created;
      return reply.code(201).send({
        workspace: { id: workspace.id, name: workspace.name, createdAt: workspace.createdAt.toISOString() },
        apiKey: { key: apiKey.key, prefix: apiKey.prefix },
      });
    },
  );
}

function registerDisableRoutes(app: FastifyInstance, options: AdminOptions): void {
  for (const disabled of [true, false]) {
    app.post<{ Params: { domain: string; code: string }; Body: { reason?: string } | null }>(
      `/v1/admin/links/:domain/:code/${disabled ? "disable" : "enable"}`,
      {
        schema: {
          summary: disabled
            ? "Disable a link without deleting it: it answers 410 from now on"
            : "Enable a disabled link again",
          tags,
          security: bearerSecurity,
          errorCodes: ["LINK_NOT_FOUND"],
          params: linkParams,
          ...(disabled ? { body: disableBody } : {}),
          response: { 200: switchedView },
        },
      },
      async (request) => {
        const domain = request.params.domain.toLowerCase();
        const { code } = request.params;
        const reason = request.body?.reason ?? "disabled by an operator";
        const found = await options.links.setDisabled(
          domain,
          code,
          disabled ? { reason } : null,
          options.clock.nowMs(),
        );
        if (!found) throw errors.create("LINK_NOT_FOUND", { fields: { domain, code } });
        await options.reader.forget(domain, code);
        return { domain, code, disabled };
      },
    );
  }
}

const orphanQuery = {
  type: "object",
  additionalProperties: false,
  properties: {
    from: { type: "string", format: "date-time", description: "Default: 30 days before `to`" },
    to: { type: "string", format: "date-time", description: "Default: now" },
  },
} as const;

const orphanView = {
  type: "object",
  required: ["orphans"],
  properties: {
    orphans: {
      type: "array",
      items: {
        type: "object",
        required: ["domain", "kind", "status", "visits"],
        properties: {
          domain: { type: "string" },
          kind: { type: "string", enum: ["base", "unknown", "gone"] },
          status: { type: "integer" },
          visits: { type: "integer" },
        },
      },
    },
  },
} as const;

function registerOrphanRoute(app: FastifyInstance, options: AdminOptions): void {
  const { clicks } = options;
  app.get<{ Querystring: { from?: string; to?: string } }>(
    "/v1/admin/orphan-visits",
    {
      schema: {
        summary: "Visits of no link (base domain, unknown code, expired or disabled), counted apart",
        tags,
        security: bearerSecurity,
        errorCodes: ["LINK_INVALID"],
        querystring: orphanQuery,
        response: { 200: orphanView },
      },
    },
    async (request) => {
      const { fromMs, toMs } = rangeOf({ granularity: "day", ...request.query }, options.clock.nowMs());
      return { orphans: await clicks.orphans(fromMs, toMs) };
    },
  );
}

/** The admin scope: the operator's token on every request, then workspaces, keys and link switches. */
export async function registerAdminApi(app: FastifyInstance, options: AdminOptions): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "url-shortener", token: options.adminToken }));
    registerWorkspaceRoutes(scope, options);
    registerApiKeyAdminRoutes(scope, {
      owners: "workspaces",
      keys: workspaceKeys,
      db: options.db,
      clock: options.clock,
      randomBytes: options.randomBytes,
      ownerNotFound: (id) => errors.create("WORKSPACE_NOT_FOUND", { fields: { id } }),
      ownerNotFoundCode: "WORKSPACE_NOT_FOUND",
    });
    registerDisableRoutes(scope, options);
    registerOrphanRoute(scope, options);
  });
}
