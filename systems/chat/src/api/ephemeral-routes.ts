/**
 * Typing and presence on the send service: ephemeral, nothing written to PostgreSQL (the
 * membership check is a read), fanned out only in direct chats and groups (a channel is
 * 409 CHAT_FANOUT_CHANNEL), a conversation you are not in is 404.
 *
 *   POST /v1/conversations/{chatId}/typing     202: a `typing` frame to the other members' live devices,
 *                                              through the gateways' routing (domain/typing.ts)
 *   GET  /v1/conversations/{chatId}/presence   the members online now, from the session table
 *                                              (domain/presence.ts)
 *
 * The gateway calls both for its `typing` and `presence` frames, after its own throttle.
 *
 * @example
 * registerEphemeralRoutes(scope, context, auth.principalOf);
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { parseId } from "../domain/conversation.ts";
import { presenceOf } from "../domain/presence.ts";
import { typingFrame } from "../domain/typing.ts";
import { errors } from "../errors.ts";
import type { ChatApiContext } from "./api-context.ts";
import { chatParams } from "./chat-schemas.ts";
import type { UserIdentity } from "./user-tokens.ts";

const tags = ["presence"];
const errorCodes = ["CHAT_NOT_FOUND", "CHAT_FANOUT_CHANNEL"];

export function registerEphemeralRoutes(
  app: FastifyInstance,
  context: ChatApiContext,
  userOf: (request: FastifyRequest) => UserIdentity,
): void {
  const { history, sendPath, sessions, clock } = context;

  /** The members of a direct chat or a group the caller is in (404 otherwise; 409 for a channel). */
  const membersOf = async (request: FastifyRequest<{ Params: { chatId: string } }>) => {
    const chatId = parseId(request.params.chatId)!;
    const { userId } = userOf(request);
    const conversation = await history.conversation(chatId, userId);
    if (conversation.kind === "channel")
      throw errors.create("CHAT_FANOUT_CHANNEL", { fields: { chatId: String(chatId), field: "chatId" } });
    return { chatId, members: await history.members(chatId, userId) };
  };

  app.post<{ Params: { chatId: string } }>(
    "/v1/conversations/:chatId/typing",
    {
      schema: {
        summary: "You are typing: the other members' live devices get a typing frame that expires",
        tags,
        security: bearerSecurity,
        errorCodes,
        params: chatParams,
        response: {
          202: {
            type: "object",
            required: ["reached"],
            properties: { reached: { type: "integer", description: "users with a live device reached" } },
          },
        },
      },
    },
    async (request, reply) => {
      const { chatId, members } = await membersOf(request);
      const { userId, deviceId } = userOf(request);
      const others = members.filter((member) => member !== userId);
      const reached = await sendPath.route(others, typingFrame(chatId, userId, deviceId));
      return reply.code(202).send({ reached: reached.size });
    },
  );

  app.get<{ Params: { chatId: string } }>(
    "/v1/conversations/:chatId/presence",
    {
      schema: {
        summary: "Who of the members is online now (a live session row; offline within the session TTL)",
        tags,
        security: bearerSecurity,
        errorCodes,
        params: chatParams,
        response: {
          200: {
            type: "object",
            required: ["users"],
            properties: {
              users: {
                type: "array",
                items: {
                  type: "object",
                  required: ["userId", "online", "devices"],
                  properties: {
                    userId: { type: "string" },
                    online: { type: "boolean" },
                    devices: { type: "array", items: { type: "string" } },
                  },
                },
              },
            },
          },
        },
      },
    },
    async (request) => {
      const { members } = await membersOf(request);
      return { users: presenceOf(members, await sessions.lookup(members, clock.nowMs())) };
    },
  );
}
