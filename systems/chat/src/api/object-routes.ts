/**
 * The object store's two routes (CH-24), S3's pre-signed URL shape on the local directory:
 *
 *   PUT /v1/objects/{key}?sig=…   the body, streamed to disk: exactly the signed size, with the
 *                                 signed Content-Type → 200 {key, bytes, sha256, created} + ETag;
 *                                 the same bytes again → 200 created: false; other bytes → 409
 *   GET /v1/objects/{key}?sig=…   the bytes, with the signed type
 *
 * No user token and no database: the signature is the whole authorization (media-urls.ts).
 * User bytes are served so that a browser cannot run them on this origin: `nosniff`, a
 * sandboxing CSP, and `attachment` for anything but images, video and audio.
 *
 * @example
 * // curl -X PUT -H 'content-type: image/png' --data-binary @cat.png "$uploadUrl"
 */
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import { decimalId } from "./chat-schemas.ts";
import type { MediaLibrary } from "./media-library.ts";
import { OBJECTS_PATH } from "./media-urls.ts";

const params = {
  type: "object",
  required: ["key"],
  additionalProperties: false,
  properties: { key: decimalId },
} as const;

const query = {
  type: "object",
  required: ["sig"],
  additionalProperties: false,
  properties: { sig: { type: "string", minLength: 1, maxLength: 2_048 } },
} as const;

const putView = {
  type: "object",
  required: ["key", "bytes", "sha256", "created"],
  properties: {
    key: { type: "string" },
    bytes: { type: "integer" },
    sha256: { type: "string" },
    created: { type: "boolean" },
  },
} as const;

const INLINE = /^(image|video|audio)\//;

interface ObjectRequest {
  Params: { key: string };
  Querystring: { sig: string };
}

export async function registerObjectRoutes(app: FastifyInstance, media: MediaLibrary): Promise<void> {
  await app.register(async (scope) => {
    // Any type, left unread: the handler streams the body to disk within the signed size.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));

    scope.put<ObjectRequest>(
      `${OBJECTS_PATH}/:key`,
      {
        schema: {
          summary: "Upload an object's bytes to a pre-signed URL (POST /v1/media gives one)",
          tags: ["media"],
          errorCodes: [
            "OBJECT_SIGNATURE_INVALID",
            "OBJECT_URL_EXPIRED",
            "OBJECT_CONTENT_TYPE_MISMATCH",
            "OBJECT_SIZE_MISMATCH",
            "OBJECT_EXISTS",
          ],
          params,
          querystring: query,
          response: { 200: putView },
        },
      },
      async (request, reply) => {
        const { key } = request.params;
        const grant = media.urls.verify(request.query.sig, key, "PUT");
        const bytes = grant.bytes ?? 0;
        const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
        if (type !== grant.contentType) {
          throw errors.create("OBJECT_CONTENT_TYPE_MISMATCH", {
            detail: `the URL was signed for Content-Type ${grant.contentType}; the request sent ${type || "none"}`,
            fields: { key, field: "content-type" },
          });
        }
        const length = request.headers["content-length"];
        if (length !== undefined && length !== String(bytes)) {
          throw errors.create("OBJECT_SIZE_MISMATCH", {
            detail: `the URL was signed for ${bytes} bytes; Content-Length is ${length}`,
            fields: { key, field: "content-length" },
          });
        }
        const stored = await media.objects.put(key, request.raw, bytes);
        return reply.header("etag", `"${stored.sha256}"`).send({ key, ...stored });
      },
    );

    scope.get<ObjectRequest>(
      `${OBJECTS_PATH}/:key`,
      {
        schema: {
          summary: "Download an object's bytes from a pre-signed URL (GET /v1/media/{id} gives one)",
          tags: ["media"],
          errorCodes: ["OBJECT_SIGNATURE_INVALID", "OBJECT_URL_EXPIRED", "OBJECT_NOT_FOUND"],
          params,
          querystring: query,
        },
      },
      async (request, reply) => {
        const { key } = request.params;
        const grant = media.urls.verify(request.query.sig, key, "GET");
        const size = await media.objects.size(key);
        if (size === undefined) throw errors.create("OBJECT_NOT_FOUND", { fields: { key } });
        return reply
          .header("content-type", grant.contentType)
          .header("content-length", String(size))
          .header("cache-control", "private, max-age=300")
          .header("x-content-type-options", "nosniff")
          .header("content-security-policy", "sandbox; default-src 'none'")
          .header("content-disposition", INLINE.test(grant.contentType) ? "inline" : "attachment")
          .send(media.objects.read(key));
      },
    );
  });
}
