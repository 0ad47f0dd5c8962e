/**
 * What every tenant route needs: the database, the injected clock and random bytes (so a
 * test's ids and instants are reproducible), the authenticated tenant of a request, and
 * the settings the routes enforce.
 *
 * @example
 * const context: ApiContext = { db, clock: systemClock, randomBytes, tenantOf: auth.tenantOf, settings };
 * registerEventRoutes(scope, context);
 */
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { FastifyRequest } from "fastify";
import type { RandomBytes } from "../domain/store-ids.ts";
import type { UrlPolicy } from "../domain/url-policy.ts";

export interface ApiSettings {
  /** Bound on an event payload's JSON text, bytes (POST /v1/events). */
  maxPayloadBytes: number;
  /** SSRF policy endpoint URLs pass at creation and update. */
  urlPolicy: UrlPolicy;
}

export interface ApiContext {
  db: Database;
  clock: Clock;
  /** Cryptographically secure in production: ids and signing secrets come from it. */
  randomBytes: RandomBytes;
  /** The tenant the request authenticated as (register-api.ts, bearer-auth). */
  tenantOf(request: FastifyRequest): string;
  settings: ApiSettings;
}
