/**
 * Edit and delete of a message by its sender, as events in the history (the history is the
 * queue): each is stored like a message — a seq of its own, durably first, then delivered to
 * every member's devices by the same send path — so a device resuming after its last seq
 * sees it in order. The changed message is rewritten in the same transaction (new body, or a
 * tombstone with an empty body).
 *
 *   PUT    /v1/conversations/{chatId}/messages/{messageId}   {clientMsgId, body}: 201 the edit event;
 *                                                            200 the first one for a resent clientMsgId
 *   DELETE /v1/conversations/{chatId}/messages/{messageId}   201 the delete event; 200 the first one
 *                                                            when the message was already deleted
 *
 * 404 CHAT_MESSAGE_NOT_FOUND (no such text message: edits and deletes cannot be changed),
 * 403 CHAT_MESSAGE_NOT_SENDER (someone else's), 409 CHAT_MESSAGE_DELETED (an edit of a
 * tombstone); each names `messageId`.
 *
 * @example
 * registerMessageChangeRoutes(scope, context, auth.principalOf);
 */
import { randomUUID } from "node:crypto";
import { bearerSecurity } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { checkBody, parseId } from "../domain/conversation.ts";
import type { MessageChange } from "../domain/history-port.ts";
import { messageJson } from "../domain/wire.ts";
import { errors } from "../errors.ts";
import type { ChatApiContext } from "./api-context.ts";
import { editBody, messageParams, sentView } from "./chat-schemas.ts";
import type { UserIdentity } from "./user-tokens.ts";

const tags = ["messages"];
const errorCodes = ["CHAT_NOT_FOUND", "CHAT_MESSAGE_NOT_FOUND", "CHAT_MESSAGE_NOT_SENDER"] as const;

interface MessageParams {
  chatId: string;
  messageId: string;
}

export function registerMessageChangeRoutes(
  app: FastifyInstance,
  context: ChatApiContext,
  userOf: (request: FastifyRequest) => UserIdentity,
): void {
  const { sendPath, ids, clock } = context;

  const store = async (
    request: FastifyRequest<{ Params: MessageParams }>,
    kind: MessageChange["kind"],
    clientMsgId: string,
    body: string,
  ) => {
    // The schema's pattern admits only what parseId accepts, up to 2^63 - 1.
    const chatId = parseId(request.params.chatId)!;
    const targetId = parseId(request.params.messageId)!;
    const { userId, deviceId } = userOf(request);
    const sent = await sendPath.send({
      chatId,
      id: ids.next(),
      clientMsgId,
      senderId: userId,
      senderDevice: deviceId,
      body,
      nowMs: clock.nowMs(),
      change: { kind, targetId },
    });
    context.onSent?.(sent.created);
    await sent.delivered;
    return sent;
  };

  app.put<{ Params: MessageParams; Body: { clientMsgId: string; body: string } }>(
    "/v1/conversations/:chatId/messages/:messageId",
    {
      schema: {
        summary: "Edit your message: an edit event in the history, the message's body replaced",
        tags,
        security: bearerSecurity,
        errorCodes: [...errorCodes, "CHAT_MESSAGE_DELETED", "CHAT_MESSAGE_INVALID"],
        params: messageParams,
        body: editBody,
        response: { 200: sentView, 201: sentView },
      },
    },
    async (request, reply) => {
      const problem = checkBody(request.body.body);
      if (problem)
        throw errors.create("CHAT_MESSAGE_INVALID", { detail: problem, fields: { field: "body" } });
      const sent = await store(request, "edit", request.body.clientMsgId.toLowerCase(), request.body.body);
      return reply
        .code(sent.created ? 201 : 200)
        .send({ message: messageJson(sent.message), created: sent.created });
    },
  );

  app.delete<{ Params: MessageParams }>(
    "/v1/conversations/:chatId/messages/:messageId",
    {
      schema: {
        summary: "Delete your message: a delete event in the history, the message left as a tombstone",
        tags,
        security: bearerSecurity,
        errorCodes: [...errorCodes],
        params: messageParams,
        response: { 200: sentView, 201: sentView },
      },
    },
    async (request, reply) => {
      // Idempotent without a client id: a delete of a tombstone returns the first delete event.
      const sent = await store(request, "delete", randomUUID(), "");
      return reply
        .code(sent.created ? 201 : 200)
        .send({ message: messageJson(sent.message), created: sent.created });
    },
  );
}
