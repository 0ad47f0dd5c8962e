/**
 * The whole HTTP API of chat's send service on a Fastify instance, wired the one way main.ts
 * and the tests both use: the token route behind the issuer's token, the object store's
 * pre-signed URLs (their signature is their authorization), and the conversations and media
 * API in a scope whose onRequest hook verifies the user's JWT (no token 401 AUTH_MISSING, a
 * bad or expired one 401 AUTH_INVALID).
 *
 * @example
 * await registerApi(service.app, context);
 */
import { createBearerAuth } from "@casebook/infra/http/bearer-auth";
import type { FastifyInstance } from "fastify";
import type { ChatApiContext } from "./api-context.ts";
import { registerConversationRoutes } from "./conversation-routes.ts";
import { registerEphemeralRoutes } from "./ephemeral-routes.ts";
import { registerMediaRoutes } from "./media-routes.ts";
import { registerMessageChangeRoutes } from "./message-change-routes.ts";
import { registerObjectRoutes } from "./object-routes.ts";
import { registerSendBatchRoutes } from "./send-batch-routes.ts";
import { registerTokenRoutes } from "./token-routes.ts";
import type { UserIdentity } from "./user-tokens.ts";

/** A JWT is longer than an API key; still bounded before any verification work. */
const MAX_TOKEN_CHARS = 2_048;

export type ApiOptions = ChatApiContext;

export async function registerApi(app: FastifyInstance, context: ChatApiContext): Promise<void> {
  await registerTokenRoutes(app, context);
  // Outside the bearer scope: each item carries its own user's token, checked per item.
  registerSendBatchRoutes(app, context);
  // The object store's pre-signed URLs: the signature is the authorization (CH-24).
  await registerObjectRoutes(app, context.media);
  const auth = createBearerAuth<UserIdentity>({
    realm: "chat",
    maxCredentialChars: MAX_TOKEN_CHARS,
    verify: (token) => context.tokens.verify(token, context.clock.nowMs()),
  });
  await app.register(async (scope) => {
    scope.addHook("onRequest", auth.authenticate);
    registerConversationRoutes(scope, context, auth.principalOf);
    registerMessageChangeRoutes(scope, context, auth.principalOf);
    registerEphemeralRoutes(scope, context, auth.principalOf);
    registerMediaRoutes(scope, context, auth.principalOf);
  });
}
