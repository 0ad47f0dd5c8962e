/**
 * The social graph, each route authenticated and acting as the key's user, who must be the
 * user in the path (auth.ts: 401 without a valid key, 403 for another user's key):
 *
 *   PUT    /v1/users/{userId}/following/{targetId}  204: follow (the followee's recent posts are
 *                                                   merged into the follower's list by the fan-out)
 *   DELETE /v1/users/{userId}/following/{targetId}  204: unfollow (their posts leave the list)
 *   PUT    /v1/users/{userId}/hidden/{targetId}     204: mute or block ({ kind }); filtered at read
 *   DELETE /v1/users/{userId}/hidden/{targetId}     204
 *
 * Each one, once committed, drops the user's cached view (store/reader-views.ts) — also when
 * nothing changed, so a retry after a failed drop makes it; a follow or unfollow that moves
 * the followee across the tier line drops every view (the epoch).
 *
 * @example
 * registerGraphRoutes(scope, { graph, ids, clock });
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { Clock } from "@casebook/kit/clock";
import type { SnowflakeGenerator } from "@casebook/kit/snowflake";
import type { FastifyInstance } from "fastify";
import { errors } from "../errors.ts";
import type { GraphStore } from "../store/graph-store.ts";
import type { ReaderViews } from "../store/reader-views.ts";
import type { UserGuard } from "./auth.ts";
import { hideBody, targetParams } from "./feed-schemas.ts";

export interface GraphRoutesOptions {
  readonly graph: GraphStore;
  /** Readers' cached views: dropped after each change of the user's graph. */
  readonly views: Pick<ReaderViews, "invalidate" | "bumpEpoch">;
  /** The tier line readers pull above (thresholds' activePushMax). */
  readonly line: () => number;
  readonly ids: SnowflakeGenerator;
  readonly clock: Clock;
  /** The key's user must be the path's user (auth.ts). */
  readonly guard: UserGuard;
}

type TargetParams = { userId: string; targetId: string };
const tags = ["graph"];

function pairOf(params: TargetParams): [bigint, bigint] {
  if (params.userId === params.targetId)
    throw errors.create("FOLLOW_INVALID", {
      detail: "An account cannot follow, mute or block itself.",
      fields: { field: "targetId" },
    });
  return [BigInt(params.userId), BigInt(params.targetId)];
}

/** After a follow (+1) or unfollow (-1) committed with `followers` now: did the followee cross the line? */
function crossed(followers: number | undefined, step: 1 | -1, line: number): boolean {
  if (followers === undefined) return false;
  const before = followers - step;
  return before > line !== followers > line;
}

export function registerGraphRoutes(app: FastifyInstance, o: GraphRoutesOptions): void {
  const schema = (summary: string) => ({
    summary,
    tags,
    security: bearerSecurity,
    errorCodes: ["FOLLOW_INVALID", "FEED_FORBIDDEN"],
    params: targetParams,
  });

  app.put<{ Params: TargetParams }>(
    "/v1/users/:userId/following/:targetId",
    { ...o.guard, schema: schema("Follow an account") },
    async (request, reply) => {
      const [user, target] = pairOf(request.params);
      const followers = await o.graph.follow(user, target, {
        nowMs: o.clock.nowMs(),
        eventId: `follow:${o.ids.next()}`,
      });
      if (crossed(followers, 1, o.line())) await o.views.bumpEpoch();
      await o.views.invalidate(user);
      return reply.code(204).send();
    },
  );

  app.delete<{ Params: TargetParams }>(
    "/v1/users/:userId/following/:targetId",
    { ...o.guard, schema: schema("Unfollow an account") },
    async (request, reply) => {
      const [user, target] = pairOf(request.params);
      const followers = await o.graph.unfollow(user, target, {
        nowMs: o.clock.nowMs(),
        eventId: `unfollow:${o.ids.next()}`,
      });
      if (crossed(followers, -1, o.line())) await o.views.bumpEpoch();
      await o.views.invalidate(user);
      return reply.code(204).send();
    },
  );

  app.put<{ Params: TargetParams; Body: { kind: "mute" | "block" } }>(
    "/v1/users/:userId/hidden/:targetId",
    {
      ...o.guard,
      schema: {
        ...schema("Mute or block an account: its posts are filtered out of your feed"),
        body: hideBody,
      },
    },
    async (request, reply) => {
      const [user, target] = pairOf(request.params);
      await o.graph.hide(user, target, request.body.kind);
      await o.views.invalidate(user);
      return reply.code(204).send();
    },
  );

  app.delete<{ Params: TargetParams }>(
    "/v1/users/:userId/hidden/:targetId",
    { ...o.guard, schema: schema("Unmute or unblock an account") },
    async (request, reply) => {
      const [user, target] = pairOf(request.params);
      await o.graph.unhide(user, target);
      await o.views.invalidate(user);
      return reply.code(204).send();
    },
  );
}
