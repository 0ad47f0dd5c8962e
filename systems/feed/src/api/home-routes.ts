/**
 * The home feed:
 *
 *   GET /v1/me                                 whose key this is: { userId }
 *   GET /v1/users/{userId}/feed?limit&cursor   200 a page (FD-14/15), or 206 while the user's list
 *                                              is being rebuilt (what exists now, FD-19)
 *   GET /v1/users/{userId}/feed/ranked?limit&cursor   FD-22: the candidates ranked once per
 *                                              session; the cursor is a position in that ranking
 *
 * Only its owner reads it: `Authorization: Bearer <the user's key>` (auth.ts: 401 without a
 * valid key, 403 for another user's). Personal, so never cacheable at the edge: `Cache-Control: private, no-store` (FD-23). A feed
 * open marks the user active (at most once an hour per process): the push-active tier reads it.
 *
 * @example
 * registerHomeRoutes(scope, { feed, graph, clock });
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyInstance } from "fastify";
import { decodeCursor, decodeRankedCursor, encodeCursor, encodeRankedCursor } from "../domain/feed-cursor.ts";
import type { HomeFeed } from "../domain/home-feed.ts";
import { toPostJson } from "../domain/post-json.ts";
import type { RankedFeed } from "../domain/ranked-feed.ts";
import type { GraphStore } from "../store/graph-store.ts";
import type { UserGuard } from "./auth.ts";
import { feedPage, type PageQuery, pageQuery, rankedPage, userParams } from "./feed-schemas.ts";

const TOUCH_EVERY_MS = 3_600_000;
/** Bound on users remembered by the activity throttle; cleared when full. */
const MAX_TOUCHED = 100_000;

export interface HomeRoutesOptions {
  readonly feed: HomeFeed;
  readonly ranked: RankedFeed;
  readonly graph: Pick<GraphStore, "touchActive">;
  readonly clock: Clock;
  /** Only its owner reads a home feed (auth.ts). */
  readonly guard: UserGuard;
}

export function registerHomeRoutes(app: FastifyInstance, o: HomeRoutesOptions): void {
  app.get(
    "/v1/me",
    {
      onRequest: o.guard.onRequest,
      schema: {
        summary: "Whose key this is: the user every route acts as with it",
        tags: ["feed"],
        security: bearerSecurity,
        response: {
          200: { type: "object", required: ["userId"], properties: { userId: { type: "string" } } },
        },
      },
    },
    async (request) => ({ userId: String(o.guard.userOf(request)) }),
  );

  const touched = new Map<bigint, number>();
  const touch = async (userId: bigint) => {
    const nowMs = o.clock.nowMs();
    if (nowMs - (touched.get(userId) ?? Number.NEGATIVE_INFINITY) < TOUCH_EVERY_MS) return;
    if (touched.size >= MAX_TOUCHED) touched.clear();
    touched.set(userId, nowMs);
    await o.graph.touchActive(userId, nowMs);
  };

  app.get<{ Params: { userId: string }; Querystring: PageQuery }>(
    "/v1/users/:userId/feed",
    {
      ...o.guard,
      schema: {
        summary: "The user's home feed, newest first: their list merged with the celebrities they follow",
        tags: ["feed"],
        security: bearerSecurity,
        errorCodes: ["FEED_CURSOR_INVALID", "FEED_FORBIDDEN"],
        params: userParams,
        querystring: pageQuery,
        response: { 200: feedPage, 206: feedPage },
      },
    },
    async (request, reply) => {
      const userId = BigInt(request.params.userId);
      const cursor =
        request.query.cursor === undefined ? undefined : decodeCursor(request.query.cursor, "cursor");
      const [page] = await Promise.all([
        o.feed.read(userId, { cursor, limit: request.query.limit }),
        touch(userId),
      ]);
      reply.header("cache-control", "private, no-store");
      const nextCursor = page.nextCursor && encodeCursor(page.nextCursor);
      const newerCursor = page.newerCursor && encodeCursor(page.newerCursor);
      reply.code(page.partial ? 206 : 200);
      // A warm page's posts are already the API's JSON (the cached bodies, joined by the cache's
      // script): sent as they are, in feedPage's shape, never decoded and serialised again (issue 20).
      if (page.rendered !== undefined)
        return reply
          .type("application/json; charset=utf-8")
          .send(
            `{"posts":[${page.rendered}],"nextCursor":${JSON.stringify(nextCursor)},` +
              `"newerCursor":${JSON.stringify(newerCursor)},"partial":${page.partial}}`,
          );
      return reply.send({
        posts: page.posts.map(toPostJson),
        nextCursor,
        newerCursor,
        partial: page.partial,
      });
    },
  );

  app.get<{ Params: { userId: string }; Querystring: PageQuery }>(
    "/v1/users/:userId/feed/ranked",
    {
      ...o.guard,
      schema: {
        summary:
          "The ranked home feed (FD-22): candidates scored once per session; pages are positions in that ranking",
        tags: ["feed"],
        security: bearerSecurity,
        errorCodes: ["FEED_CURSOR_INVALID", "FEED_FORBIDDEN"],
        params: userParams,
        querystring: pageQuery,
        response: { 200: rankedPage, 206: rankedPage },
      },
    },
    async (request, reply) => {
      const userId = BigInt(request.params.userId);
      const cursor =
        request.query.cursor === undefined ? undefined : decodeRankedCursor(request.query.cursor, "cursor");
      const [page] = await Promise.all([
        o.ranked.read(userId, { cursor, limit: request.query.limit }),
        touch(userId),
      ]);
      reply.header("cache-control", "private, no-store");
      return reply.code(page.partial ? 206 : 200).send({
        posts: page.posts.map(toPostJson),
        nextCursor: page.nextCursor && encodeRankedCursor(page.nextCursor),
        partial: page.partial,
      });
    },
  );
}
