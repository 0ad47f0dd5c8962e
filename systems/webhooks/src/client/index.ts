/**
 * `@casebook/webhooks/client`: what another system imports to publish events to the webhooks
 * service over its public API (ARCHITECTURE rule 1's one exception) — the tenant client, the
 * admin client for setup, and their error registry.
 *
 * @example
 * import { WebhooksClient, webhooksClientErrors } from "@casebook/webhooks/client";
 * const webhooks = new WebhooksClient({ url: process.env.WEBHOOKS_URL!, apiKey: process.env.WEBHOOKS_API_KEY! });
 * await webhooks.publishEvent({ type: "payment.captured", payload, idempotencyKey: eventId });
 */
export { DEFAULT_CLIENT_TIMEOUTS } from "./api-transport.ts";
export { webhooksConfigProblems } from "./client-config.ts";
export { webhooksClientErrors } from "./client-errors.ts";
export * from "./webhooks-admin-client.ts";
export * from "./webhooks-client.ts";
