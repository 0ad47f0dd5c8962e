/**
 * Posts (FD-09/21). Every write is authenticated and acts as the key's user, who must be the
 * user in the path (auth.ts: 401 without a valid key, 403 for another user's); the author feed
 * is public.
 *
 *   POST   /v1/users/{userId}/posts           201: the post, durable with its fan-out event; with an
 *                                             Idempotency-Key, a retry gets the first answer (infra's
 *                                             shared store: another body with the key is 422)
 *   POST   /v1/users/{userId}/reposts         201: a repost, another event through the same fan-out
 *   PATCH  /v1/users/{userId}/posts/{postId}  200: the edited post (one row; every feed shows it)
 *   DELETE /v1/users/{userId}/posts/{postId}  204 (one row; reads filter the id out of the lists)
 *
 * The warm read's caches follow every write (issue 20): a new post goes into its author's
 * cached recent ids; an edit or delete marks the cached body before its commit and writes the
 * new body (or the tombstone) after it (store/post-cache.ts) — when Redis refuses the mark,
 * nothing is written (503).
 *   GET    /v1/users/{userId}/posts           the author feed: public, cacheable at the edge (FD-23)
 *
 * @example
 * registerPostRoutes(scope, { posts, ids, clock });
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import {
  idempotencyKeyHeaders,
  idempotencyKeyOf,
  sendStoredResponse,
} from "@casebook/infra/http/idempotency-key";
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import { fingerprintRequest, type StoredResponse } from "@casebook/kit/idempotency";
import type { SnowflakeGenerator } from "@casebook/kit/snowflake";
import type { FastifyInstance, FastifyReply } from "fastify";
import { decodeCursor, encodeCursor } from "../domain/feed-cursor.ts";
import type { Post } from "../domain/ports.ts";
import { toPostJson } from "../domain/post-json.ts";
import { errors } from "../errors.ts";
import type { CelebrityLists } from "../store/celebrity-lists.ts";
import type { PostCache } from "../store/post-cache.ts";
import { entryOf, type PostStore } from "../store/post-store.ts";
import type { UserGuard } from "./auth.ts";
import {
  type PageQuery,
  pageQuery,
  postBody,
  postParams,
  postView,
  repostBody,
  userParams,
} from "./feed-schemas.ts";

export interface PostRoutesOptions {
  readonly posts: PostStore;
  /** The cached bodies: marked before an edit or delete, written after. */
  readonly bodies: Pick<PostCache, "beginChange" | "changed">;
  /** Authors' cached recent ids (undefined when not cached): a new post goes in. */
  readonly celebrities: Pick<CelebrityLists, "add"> | undefined;
  readonly ids: SnowflakeGenerator;
  readonly clock: Clock;
  /** Cache-Control max-age of the public author feed (FD-23). */
  readonly authorFeedMaxAgeS: number;
  /** The key's user must be the path's user (auth.ts). */
  readonly guard: UserGuard;
  /** Idempotency-Keys of POST posts, scoped by author (infra's shared store). */
  readonly idempotency: IdempotencyStore;
  /** Where a failed post's key is released. */
  readonly db: Database;
}

type UserParams = { userId: string };
type PostParams = { userId: string; postId: string };
const tags = ["posts"];

/**
 * POST a post with an Idempotency-Key (infra's shared store, Stripe's rule): the key is claimed
 * first (a retry of a finished post replays its 201 byte for byte; one still running is 409;
 * another body with the key is 422); the post, its fan-out event and the stored answer commit
 * in ONE transaction. A failure releases the key, so a retry starts afresh.
 */
async function postIdempotently(
  o: PostRoutesOptions,
  userId: string,
  body: { text: string },
  key: string,
  input: () => Parameters<PostStore["create"]>[0],
  reply: FastifyReply,
): Promise<FastifyReply> {
  const fingerprint = fingerprintRequest({ method: "POST", path: `/v1/users/${userId}/posts`, body });
  const begun = await o.idempotency.begin({ scope: userId, key, fingerprint });
  if (begun.kind === "replay") return sendStoredResponse(reply, begun.response);
  const { lease } = begun;
  try {
    let stored: StoredResponse | undefined;
    const created = await o.posts.create(input(), async (tx, post) => {
      stored = {
        status: 201,
        headers: { "content-type": "application/json; charset=utf-8" },
        body: Buffer.from(JSON.stringify(toPostJson(post))),
      };
      await o.idempotency.complete(tx, lease, stored);
    });
    await written(o, created!);
    return sendStoredResponse(reply, stored!);
  } catch (error) {
    await o.idempotency.release(o.db, lease).catch(() => false);
    throw error;
  }
}

/**
 * After a post committed: into its author's cached recent ids, so pulled readers see it at their
 * next read. A failure here loses nothing — the fan-out adds it again from the durable event.
 */
async function written(o: PostRoutesOptions, post: Post): Promise<void> {
  await o.celebrities?.add(post.authorId, entryOf(post.id)).catch(() => undefined);
}

export function registerPostRoutes(app: FastifyInstance, o: PostRoutesOptions): void {
  app.post<{ Params: UserParams; Body: { text: string } }>(
    "/v1/users/:userId/posts",
    {
      ...o.guard,
      schema: {
        summary: "Publish a post",
        tags,
        security: bearerSecurity,
        errorCodes: ["FEED_FORBIDDEN", "FEED_IDEMPOTENCY_IN_PROGRESS", "FEED_IDEMPOTENCY_MISMATCH"],
        headers: {
          type: "object",
          properties: {
            ...idempotencyKeyHeaders(
              "Optional. The same key on every retry of one post: the first post comes back, no second one is made; another body with the key is 422",
            ),
          },
        },
        params: userParams,
        body: postBody,
        response: { 201: postView },
      },
    },
    async (request, reply) => {
      const key = idempotencyKeyOf(request.headers);
      const input = () => ({
        id: o.ids.next(),
        authorId: BigInt(request.params.userId),
        text: request.body.text,
        nowMs: o.clock.nowMs(),
      });
      if (key !== undefined)
        return postIdempotently(o, request.params.userId, request.body, key, input, reply);
      const post = await o.posts.create(input());
      await written(o, post);
      return reply.code(201).send(toPostJson(post));
    },
  );

  app.post<{ Params: UserParams; Body: { postId: string } }>(
    "/v1/users/:userId/reposts",
    {
      ...o.guard,
      schema: {
        summary: "Repost a post: another event through the same fan-out (FD-21)",
        tags,
        security: bearerSecurity,
        errorCodes: ["POST_NOT_FOUND", "FEED_FORBIDDEN"],
        params: userParams,
        body: repostBody,
        response: { 201: postView },
      },
    },
    async (request, reply) => {
      const original = (await o.posts.postsByIds([BigInt(request.body.postId)])).get(
        BigInt(request.body.postId),
      );
      if (!original) throw errors.create("POST_NOT_FOUND", { fields: { field: "postId" } });
      const post = await o.posts.create({
        id: o.ids.next(),
        authorId: BigInt(request.params.userId),
        text: null,
        repostOf: original.id,
        nowMs: o.clock.nowMs(),
      });
      await written(o, post);
      return reply.code(201).send(toPostJson(post));
    },
  );

  app.patch<{ Params: PostParams; Body: { text: string } }>(
    "/v1/users/:userId/posts/:postId",
    {
      ...o.guard,
      schema: {
        summary: "Edit a post's text: one row changes, every feed shows it at its next read (FD-21)",
        tags,
        security: bearerSecurity,
        errorCodes: ["POST_NOT_FOUND", "FEED_FORBIDDEN"],
        params: postParams,
        body: postBody,
        response: { 200: postView },
      },
    },
    async (request) => {
      const { userId, postId } = request.params;
      await o.bodies.beginChange(BigInt(postId));
      const post = await o.posts.edit(BigInt(userId), BigInt(postId), request.body.text, o.clock.nowMs());
      if (!post) throw errors.create("POST_NOT_FOUND", { fields: { field: "postId" } });
      await o.bodies.changed(post.id, post.version, post);
      return toPostJson(post);
    },
  );

  app.delete<{ Params: PostParams }>(
    "/v1/users/:userId/posts/:postId",
    {
      ...o.guard,
      schema: {
        summary: "Delete a post: one row; reads filter its id out of every list (FD-21)",
        tags,
        security: bearerSecurity,
        errorCodes: ["POST_NOT_FOUND", "FEED_FORBIDDEN"],
        params: postParams,
      },
    },
    async (request, reply) => {
      const { userId, postId } = request.params;
      await o.bodies.beginChange(BigInt(postId));
      const version = await o.posts.delete(BigInt(userId), BigInt(postId), o.clock.nowMs());
      if (version === undefined) throw errors.create("POST_NOT_FOUND", { fields: { field: "postId" } });
      await o.bodies.changed(BigInt(postId), version, null);
      return reply.code(204).send();
    },
  );

  app.get<{ Params: UserParams; Querystring: PageQuery }>(
    "/v1/users/:userId/posts",
    {
      schema: {
        summary: "An author's posts, newest first: the same for every reader, so publicly cacheable (FD-23)",
        tags,
        errorCodes: ["FEED_CURSOR_INVALID"],
        params: userParams,
        querystring: pageQuery,
      },
    },
    async (request, reply) => {
      const cursor =
        request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor, "cursor");
      if (cursor && !("before" in cursor))
        throw errors.create("FEED_CURSOR_INVALID", {
          detail: "The author feed pages backwards only.",
          fields: { field: "cursor" },
        });
      const limit = request.query.limit;
      const page = await o.posts.authorPage(BigInt(request.params.userId), {
        beforeId: cursor?.before,
        limit,
      });
      const last = page.at(-1);
      reply.header("cache-control", `public, max-age=${o.authorFeedMaxAgeS}`);
      return {
        posts: page.map(toPostJson),
        nextCursor: page.length === limit && last ? encodeCursor({ before: last.id }) : null,
      };
    },
  );
}
