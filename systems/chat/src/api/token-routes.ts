/**
 * POST /v1/tokens: the app's backend (holding CHAT_ISSUER_TOKEN) asks for a user token for
 * one of its users' devices after authenticating that user its own way; the device connects
 * to a gateway with it and refreshes it over a long connection (see user-tokens.ts).
 *
 * @example
 * // curl -s localhost:8102/v1/tokens -H "authorization: Bearer $CHAT_ISSUER_TOKEN" -d '{"userId":"ana","deviceId":"phone"}'
 */
import { bearerSecurity, createStaticTokenAuth } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import type { ChatApiContext } from "./api-context.ts";
import { tokenBody, tokenView } from "./chat-schemas.ts";

export async function registerTokenRoutes(app: FastifyInstance, context: ChatApiContext): Promise<void> {
  await app.register(async (scope) => {
    scope.addHook("onRequest", createStaticTokenAuth({ realm: "chat-issuer", token: context.issuerToken }));
    scope.post<{ Body: { userId: string; deviceId: string; ttlS: number } }>(
      "/v1/tokens",
      {
        schema: {
          summary: "Issue a user token (JWT) for one device: the app backend's call, with the issuer token",
          tags: ["tokens"],
          security: bearerSecurity,
          body: tokenBody,
          response: { 201: tokenView },
        },
      },
      async (request, reply) => {
        const { token, expiresAtMs } = await context.tokens.issue({
          ...request.body,
          nowMs: context.clock.nowMs(),
        });
        context.onGranted?.("user_token");
        return reply.code(201).send({ token, expiresAt: new Date(expiresAtMs).toISOString() });
      },
    );
  });
}
