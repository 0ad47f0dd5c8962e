/**
 * Posts (FD-09/21), each route acting as the user in the path:
 *
 *   POST   /v1/users/{userId}/posts           201: the post, durable with its fan-out event
 *   POST   /v1/users/{userId}/reposts         201: a repost, another event through the same fan-out
 *   PATCH  /v1/users/{userId}/posts/{postId}  200: the edited post (one row; every feed shows it)
 *   DELETE /v1/users/{userId}/posts/{postId}  204 (one row; reads filter the id out of the lists)
 *   GET    /v1/users/{userId}/posts           the author feed: public, cacheable at the edge (FD-23)
 *
 * @example
 * registerPostRoutes(scope, { posts, ids, clock });
 */
import type { Clock } from "@casebook/kit/clock";
import type { SnowflakeGenerator } from "@casebook/kit/snowflake";
import type { FastifyInstance } from "fastify";
import { decodeCursor, encodeCursor } from "../domain/feed-cursor.ts";
import { errors } from "../errors.ts";
import type { PostStore } from "../store/post-store.ts";
import {
  type PageQuery,
  pageQuery,
  postBody,
  postParams,
  postView,
  repostBody,
  userParams,
} from "./feed-schemas.ts";
import { toPostJson } from "./post-view.ts";

export interface PostRoutesOptions {
  readonly posts: PostStore;
  readonly ids: SnowflakeGenerator;
  readonly clock: Clock;
  /** Cache-Control max-age of the public author feed (FD-23). */
  readonly authorFeedMaxAgeS: number;
}

type UserParams = { userId: string };
type PostParams = { userId: string; postId: string };
const tags = ["posts"];

export function registerPostRoutes(app: FastifyInstance, o: PostRoutesOptions): void {
  app.post<{ Params: UserParams; Body: { text: string } }>(
    "/v1/users/:userId/posts",
    {
      schema: {
        summary: "Publish a post",
        tags,
        params: userParams,
        body: postBody,
        response: { 201: postView },
      },
    },
    async (request, reply) => {
      const post = await o.posts.create({
        id: o.ids.next(),
        authorId: BigInt(request.params.userId),
        text: request.body.text,
        nowMs: o.clock.nowMs(),
      });
      return reply.code(201).send(toPostJson(post));
    },
  );

  app.post<{ Params: UserParams; Body: { postId: string } }>(
    "/v1/users/:userId/reposts",
    {
      schema: {
        summary: "Repost a post: another event through the same fan-out (FD-21)",
        tags,
        errorCodes: ["POST_NOT_FOUND"],
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
      return reply.code(201).send(toPostJson(post));
    },
  );

  app.patch<{ Params: PostParams; Body: { text: string } }>(
    "/v1/users/:userId/posts/:postId",
    {
      schema: {
        summary: "Edit a post's text: one row changes, every feed shows it at its next read (FD-21)",
        tags,
        errorCodes: ["POST_NOT_FOUND"],
        params: postParams,
        body: postBody,
        response: { 200: postView },
      },
    },
    async (request) => {
      const { userId, postId } = request.params;
      const post = await o.posts.edit(BigInt(userId), BigInt(postId), request.body.text, o.clock.nowMs());
      if (!post) throw errors.create("POST_NOT_FOUND", { fields: { field: "postId" } });
      return toPostJson(post);
    },
  );

  app.delete<{ Params: PostParams }>(
    "/v1/users/:userId/posts/:postId",
    {
      schema: {
        summary: "Delete a post: one row; reads filter its id out of every list (FD-21)",
        tags,
        errorCodes: ["POST_NOT_FOUND"],
        params: postParams,
      },
    },
    async (request, reply) => {
      const { userId, postId } = request.params;
      if (!(await o.posts.delete(BigInt(userId), BigInt(postId), o.clock.nowMs())))
        throw errors.create("POST_NOT_FOUND", { fields: { field: "postId" } });
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
