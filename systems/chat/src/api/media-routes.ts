/**
 * Media by reference (CH-24), the API side — as the user of the bearer JWT:
 *
 *   POST /v1/media              {contentType, bytes} → 201 {media (pending), upload: a pre-signed PUT}
 *   GET  /v1/media/{mediaId}    → 200 {media, download: a pre-signed GET} for its uploader or a
 *                               member of a conversation with a message that carries it; else 404
 *
 * The bytes never pass through these routes: they go to the object store's URL
 * (object-routes.ts), and a message names the media by id (POST …/messages `mediaId`, or the
 * socket's send frame). A URL's origin is CHAT_MEDIA_URL, or the one this request came to.
 *
 * @example
 * registerMediaRoutes(scope, context, auth.principalOf);
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { SignedRequest } from "../domain/media.ts";
import type { ChatApiContext } from "./api-context.ts";
import { mediaDownloadView, mediaParams, mediaUploadBody, mediaUploadView } from "./chat-schemas.ts";
import type { UserIdentity } from "./user-tokens.ts";

const tags = ["media"];

/** Where this request came in: the default origin of the URLs it is given. */
export function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

export function signedRequestJson(request: SignedRequest) {
  return {
    method: request.method,
    url: request.url,
    headers: request.headers,
    expiresAt: new Date(request.expiresAtMs).toISOString(),
  };
}

export function registerMediaRoutes(
  app: FastifyInstance,
  context: ChatApiContext,
  userOf: (request: FastifyRequest) => UserIdentity,
): void {
  const { media } = context;

  app.post<{ Body: { contentType: string; bytes: number } }>(
    "/v1/media",
    {
      schema: {
        summary: "Authorize an upload: a pending media id and a pre-signed PUT URL for exactly these bytes",
        tags,
        security: bearerSecurity,
        errorCodes: ["CHAT_MEDIA_INVALID", "CHAT_MEDIA_PENDING_TOO_MANY"],
        body: mediaUploadBody,
        response: { 201: mediaUploadView },
      },
    },
    async (request, reply) => {
      const grant = await media.authorizeUpload(userOf(request).userId, request.body, originOf(request));
      context.onGranted?.("media_upload");
      return reply.code(201).send({ media: grant.media, upload: signedRequestJson(grant.upload) });
    },
  );

  app.get<{ Params: { mediaId: string } }>(
    "/v1/media/:mediaId",
    {
      schema: {
        summary: "A media you uploaded or were sent, with a pre-signed GET URL for its bytes",
        tags,
        security: bearerSecurity,
        errorCodes: ["CHAT_MEDIA_NOT_FOUND", "CHAT_MEDIA_NOT_UPLOADED"],
        params: mediaParams,
        response: { 200: mediaDownloadView },
      },
    },
    async (request) => {
      const grant = await media.download(userOf(request).userId, request.params.mediaId, originOf(request));
      return { media: grant.media, download: signedRequestJson(grant.download) };
    },
  );
}
