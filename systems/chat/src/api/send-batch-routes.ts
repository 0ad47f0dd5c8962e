/**
 * The gateways' batched send (CH-04, CH-13): `POST /v1/message-batches` carries the text
 * sends a gateway received while its previous call was in flight — one HTTP call for up to
 * MAX_SEND_BATCH_ITEMS messages instead of one each. Every item names its user's own token
 * (checked here exactly as on the single route: a gateway is not trusted more than its
 * users), its conversation, clientMsgId and body, and gets its own result in the same
 * position: `{status: 201|200, message, created}` as the single route answers, or
 * `{status, code, detail, field?}` as its problem+json would. One item's refusal (a bad
 * token, a conversation you are not in, a bad body) never fails its neighbours.
 *
 * The items start in order, synchronously, so they reach the history's group commit in
 * the order the gateway sent them: a connection's sends keep their order. Each is the same
 * send as the single route's (`sendText`): stored durably first, then delivered (CH-03),
 * a resent clientMsgId returning the first message (CH-09) — but its result is given as soon
 * as the message is stored: the delivery goes on after the answer (SendPath's bounded
 * background deliveries), so the gateway's calls in flight, bounded by CH-13, are not held
 * while the message is routed. An error that is not a
 * refusal (the database away) is that item's 503 BACKEND_UNAVAILABLE; a call that fails
 * as a whole fails every item so — the client resends with the same clientMsgId.
 *
 * @example
 * // POST /v1/message-batches {"items":[{"token":"eyJ…","chatId":"42","clientMsgId":"…","body":"hi"}]}
 * // → 200 {"results":[{"status":201,"message":{…},"created":true}]}
 */
import { CasebookError } from "@casebook/kit/errors";
import type { FastifyInstance } from "fastify";
import { messageJson } from "../domain/wire.ts";
import type { ChatApiContext } from "./api-context.ts";
import { decimalId, messageView } from "./chat-schemas.ts";
import { sendText } from "./conversation-routes.ts";
import type { UserIdentity } from "./user-tokens.ts";

/** Items per call: with bodies ≤ MAX_BATCHED_BODY_CHARS, a full batch stays under the 1 MiB body limit. */
export const MAX_SEND_BATCH_ITEMS = 32;
/** Longer bodies (up to 128 KB) go one by one on the single route. 4,096 chars are ≤ 24 KB as JSON. */
export const MAX_BATCHED_BODY_CHARS = 4_096;
const MAX_TOKEN_CHARS = 2_048;

export const SEND_BATCH_PATH = "/v1/message-batches";

export interface SendBatchItem {
  token: string;
  chatId: string;
  clientMsgId: string;
  body: string;
}

export type SendBatchResult =
  | { status: 200 | 201; message: ReturnType<typeof messageJson>; created: boolean }
  | { status: number; code: string; detail: string; field?: string };

const sendBatchBody = {
  type: "object",
  required: ["items"],
  additionalProperties: false,
  properties: {
    items: {
      type: "array",
      minItems: 1,
      maxItems: MAX_SEND_BATCH_ITEMS,
      items: {
        type: "object",
        required: ["token", "chatId", "clientMsgId", "body"],
        additionalProperties: false,
        properties: {
          token: { type: "string", minLength: 1, maxLength: MAX_TOKEN_CHARS },
          chatId: decimalId,
          clientMsgId: { type: "string", format: "uuid" },
          body: { type: "string", minLength: 1, maxLength: MAX_BATCHED_BODY_CHARS },
        },
      },
    },
  },
} as const;

const sendBatchView = {
  type: "object",
  required: ["results"],
  properties: {
    results: {
      type: "array",
      items: {
        type: "object",
        required: ["status"],
        properties: {
          status: { type: "integer" },
          message: messageView,
          created: { type: "boolean" },
          code: { type: "string" },
          detail: { type: "string" },
          field: { type: "string" },
        },
      },
    },
  },
} as const;

export function registerSendBatchRoutes(app: FastifyInstance, context: ChatApiContext): void {
  app.post<{ Body: { items: SendBatchItem[] } }>(
    SEND_BATCH_PATH,
    {
      schema: {
        summary:
          "Send many text messages at once (the gateways' call): each item with its user's token and its own result",
        tags: ["conversations"],
        body: sendBatchBody,
        response: { 200: sendBatchView },
      },
    },
    async (request) => {
      const { items } = request.body;
      // Every token first, then every send started in one synchronous pass: item order is
      // the order of the history's group commit, whichever token was already known.
      const nowMs = context.clock.nowMs();
      const identities = await Promise.all(items.map((item) => context.tokens.verify(item.token, nowMs)));
      const results = await Promise.all(
        items.map((item, i) => sendItem(context, item, identities[i], (err) => request.log.error({ err }))),
      );
      return { results };
    },
  );
}

async function sendItem(
  context: ChatApiContext,
  item: SendBatchItem,
  identity: UserIdentity | undefined,
  onUnexpected: (err: unknown) => void,
): Promise<SendBatchResult> {
  if (identity === undefined)
    return { status: 401, code: "AUTH_INVALID", detail: "the user token is not valid", field: "token" };
  try {
    const sent = await sendText(context, identity, { chatId: item.chatId }, item);
    return { status: sent.created ? 201 : 200, message: messageJson(sent.message), created: sent.created };
  } catch (err) {
    if (!(err instanceof CasebookError)) {
      // The database or Redis away: "not now" for this item, which the client resends.
      onUnexpected(err);
      return {
        status: 503,
        code: "BACKEND_UNAVAILABLE",
        detail: "the send failed; resend with the same clientMsgId",
      };
    }
    const field = err.fields.field;
    return {
      status: err.status,
      code: err.code,
      detail: err.message,
      ...(typeof field === "string" ? { field } : {}),
    };
  }
}
