/**
 * The conversations API of the send service, every route as the user of the bearer JWT
 * (a conversation you are not in reads as 404):
 *
 *   POST /v1/conversations                        201: direct (one other member), group or channel
 *   GET  /v1/conversations                        yours, the most recent message first
 *   POST /v1/conversations/{chatId}/members       add members (not to a direct chat)
 *   POST /v1/conversations/{chatId}/messages      201 a new message; 200 the first one for a resent clientMsgId (CH-09);
 *                                                 with `mediaId`, media by reference and `body` its caption (CH-24)
 *   POST /v1/conversations/{chatId}/receipts      delivered / read up to a seq, for this device (CH-11)
 *   GET  /v1/conversations/{chatId}/pointers      your devices' delivered/read pointers (CH-25)
 *   GET  /v1/conversations/{chatId}/messages      ?after=SEQ ascending ("everything after", CH-05/18), or
 *                                                 ?before=SEQ / no cursor: newest first (CH-26)
 *
 * @example
 * registerConversationRoutes(scope, context, auth.principalOf);
 */
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { type ChatKind, checkBody, membersMax, parseId, parseSeq } from "../domain/conversation.ts";
import type { Sent } from "../domain/send-path.ts";
import { messageJson } from "../domain/wire.ts";
import { errors } from "../errors.ts";
import { type ChatApiContext, conversationJson } from "./api-context.ts";
import {
  chatParams,
  conversationView,
  createConversationBody,
  historyPage,
  historyQuery,
  listQuery,
  membersBody,
  pointersView,
  receiptBody,
  sendBody,
  sentView,
} from "./chat-schemas.ts";
import type { UserIdentity } from "./user-tokens.ts";

const tags = ["conversations"];
const auth = { security: bearerSecurity } as const;

interface ChatParams {
  chatId: string;
}

function chatIdOf(params: ChatParams): bigint {
  // The schema's pattern admits only what parseId accepts, up to 2^63 - 1.
  const id = parseId(params.chatId);
  if (id === undefined) throw errors.create("CHAT_NOT_FOUND", { fields: { chatId: params.chatId } });
  return id;
}

/**
 * A text send as the user of `identity`: the one path of the single route and of each item
 * of the gateways' batches (send-batch-routes.ts) — body checked, then the send path
 * (stored first, then delivered, CH-03); a resent clientMsgId returns the first message.
 */
export async function sendText(
  context: ChatApiContext,
  identity: UserIdentity,
  params: ChatParams,
  input: { clientMsgId: string; body: string; mediaId?: string | undefined },
): Promise<Sent> {
  const chatId = chatIdOf(params);
  const problem = checkBody(input.body, input.mediaId !== undefined);
  if (problem) throw errors.create("CHAT_MESSAGE_INVALID", { detail: problem, fields: { field: "body" } });
  // CH-24: the message carries only the reference, resolved (the sender's, stored) before the write.
  const media =
    input.mediaId === undefined ? undefined : await context.media.refForSend(identity.userId, input.mediaId);
  const sent = await context.sendPath.send({
    chatId,
    id: context.ids.next(),
    clientMsgId: input.clientMsgId.toLowerCase(),
    senderId: identity.userId,
    senderDevice: identity.deviceId,
    body: input.body,
    nowMs: context.clock.nowMs(),
    ...(media === undefined ? {} : { media }),
  });
  context.onSent?.(sent.created);
  return sent;
}

export function registerConversationRoutes(
  app: FastifyInstance,
  context: ChatApiContext,
  userOf: (request: FastifyRequest) => UserIdentity,
): void {
  const { history, sendPath, ids, clock } = context;

  app.post<{ Body: { kind: ChatKind; title?: string; members: string[] } }>(
    "/v1/conversations",
    {
      schema: {
        summary: "Create a conversation: direct (you and one other), group or channel",
        tags,
        ...auth,
        errorCodes: ["CHAT_DIRECT_MEMBERS", "CHAT_MEMBERS_TOO_MANY"],
        body: createConversationBody,
        response: { 200: conversationView, 201: conversationView },
      },
    },
    async (request, reply) => {
      const { userId } = userOf(request);
      const { kind, title, members } = request.body;
      const all = [...new Set([userId, ...members])];
      if (kind === "direct" && all.length !== 2) {
        throw errors.create("CHAT_DIRECT_MEMBERS", { fields: { field: "members", count: all.length } });
      }
      if (all.length > membersMax(kind)) {
        throw errors.create("CHAT_MEMBERS_TOO_MANY", { fields: { field: "members", max: membersMax(kind) } });
      }
      const { conversation, created } = await history.createConversation({
        id: ids.next(),
        kind,
        title,
        createdBy: userId,
        members: all,
        nowMs: clock.nowMs(),
      });
      return reply.code(created ? 201 : 200).send(conversationJson(conversation));
    },
  );

  app.get<{ Querystring: { limit: number } }>(
    "/v1/conversations",
    {
      schema: {
        summary: "Your conversations, the one with the most recent message first",
        tags,
        ...auth,
        querystring: listQuery,
        response: {
          200: {
            type: "object",
            required: ["conversations"],
            properties: { conversations: { type: "array", items: conversationView } },
          },
        },
      },
    },
    async (request) => {
      const list = await history.conversationsOf(userOf(request).userId, request.query.limit);
      return { conversations: list.map(conversationJson) };
    },
  );

  app.post<{ Params: ChatParams; Body: { members: string[] } }>(
    "/v1/conversations/:chatId/members",
    {
      schema: {
        summary: "Add members to a group or a channel",
        tags,
        ...auth,
        errorCodes: ["CHAT_NOT_FOUND", "CHAT_DIRECT_FIXED", "CHAT_MEMBERS_TOO_MANY"],
        params: chatParams,
        body: membersBody,
        response: {
          200: {
            type: "object",
            required: ["memberCount"],
            properties: { memberCount: { type: "integer" } },
          },
        },
      },
    },
    async (request) => {
      const chatId = chatIdOf(request.params);
      const count = await history.addMembers(
        chatId,
        userOf(request).userId,
        request.body.members,
        clock.nowMs(),
      );
      return { memberCount: count };
    },
  );

  app.post<{ Params: ChatParams; Body: { clientMsgId: string; body: string; mediaId?: string } }>(
    "/v1/conversations/:chatId/messages",
    {
      schema: {
        summary:
          "Send a message: stored durably first, then delivered; a resent clientMsgId returns the first result",
        tags,
        ...auth,
        errorCodes: [
          "CHAT_NOT_FOUND",
          "CHAT_MESSAGE_INVALID",
          "CHAT_MEDIA_NOT_FOUND",
          "CHAT_MEDIA_NOT_UPLOADED",
        ],
        params: chatParams,
        body: sendBody,
        response: { 200: sentView, 201: sentView },
      },
    },
    async (request, reply) => {
      const sent = await sendText(context, userOf(request), request.params, request.body);
      // This route answers "stored, then delivered" (the gateways' batch route answers once stored).
      await sent.delivered;
      return reply
        .code(sent.created ? 201 : 200)
        .send({ message: messageJson(sent.message), created: sent.created });
    },
  );

  app.get<{ Params: ChatParams; Querystring: { after?: string; before?: string; limit: number } }>(
    "/v1/conversations/:chatId/messages",
    {
      schema: {
        summary:
          "History: ?after=SEQ everything after it in order; otherwise newest first, ?before=SEQ for older pages",
        tags,
        ...auth,
        errorCodes: ["CHAT_NOT_FOUND", "CHAT_CURSOR_CONFLICT"],
        params: chatParams,
        querystring: historyQuery,
        response: { 200: historyPage },
      },
    },
    async (request) => {
      const chatId = chatIdOf(request.params);
      const { userId } = userOf(request);
      const { after, before, limit } = request.query;
      if (after !== undefined && before !== undefined) {
        throw errors.create("CHAT_CURSOR_CONFLICT", { fields: { field: "after" } });
      }
      if (after !== undefined) {
        const page = await history.after(chatId, userId, parseSeq(after)!, limit);
        const last = page.at(-1);
        return {
          messages: page.map(messageJson),
          order: "ascending",
          next: page.length === limit && last ? String(last.seq) : null,
        };
      }
      const page = await history.before(
        chatId,
        userId,
        before === undefined ? undefined : parseId(before),
        limit,
      );
      const last = page.at(-1);
      return {
        messages: page.map(messageJson),
        order: "newest-first",
        next: page.length === limit && last && last.seq !== 1n ? String(last.seq) : null,
      };
    },
  );

  app.post<{ Params: ChatParams; Body: { kind: "delivered" | "read"; seq: string } }>(
    "/v1/conversations/:chatId/receipts",
    {
      schema: {
        summary: "This device received (delivered) or displayed (read) everything up to seq",
        tags,
        ...auth,
        errorCodes: ["CHAT_NOT_FOUND", "CHAT_RECEIPT_INVALID"],
        params: chatParams,
        body: receiptBody,
        response: {
          200: { type: "object", required: ["moved"], properties: { moved: { type: "boolean" } } },
        },
      },
    },
    async (request) => {
      const chatId = chatIdOf(request.params);
      const { userId, deviceId } = userOf(request);
      const seq = parseId(request.body.seq)!;
      const move = await sendPath.receipt({
        chatId,
        userId,
        deviceId,
        kind: request.body.kind,
        seq,
        nowMs: clock.nowMs(),
      });
      return { moved: move !== undefined };
    },
  );

  app.get<{ Params: ChatParams }>(
    "/v1/conversations/:chatId/pointers",
    {
      schema: {
        summary: "How far each of your devices got in this conversation",
        tags,
        ...auth,
        errorCodes: ["CHAT_NOT_FOUND"],
        params: chatParams,
        response: { 200: pointersView },
      },
    },
    async (request) => {
      const pointers = await history.pointers(chatIdOf(request.params), userOf(request).userId);
      return {
        pointers: pointers.map((p) => ({
          deviceId: p.deviceId,
          deliveredSeq: String(p.deliveredSeq),
          readSeq: String(p.readSeq),
        })),
      };
    },
  );

  app.put<{ Body: { platform: "apns" | "fcm"; token: string } }>(
    "/v1/devices/push-token",
    {
      schema: {
        summary:
          "Register this device's push token (APNs or FCM): it is woken when a message finds no socket",
        tags: ["devices"],
        ...auth,
        body: {
          type: "object",
          required: ["platform", "token"],
          additionalProperties: false,
          properties: {
            platform: { type: "string", enum: ["apns", "fcm"] },
            token: { type: "string", minLength: 8, maxLength: 256 },
          },
        },
        response: { 204: { type: "null" } },
      },
    },
    async (request, reply) => {
      const { userId, deviceId } = userOf(request);
      await context.pushTokens.register({ userId, deviceId, ...request.body, nowMs: clock.nowMs() });
      context.onGranted?.("push_token");
      return reply.code(204).send();
    },
  );
}
