/**
 * What the routes need, built once by register-api.ts: the stores, the code source, the
 * abuse checks, the domains, the clock and the metrics — passed in, never reached for.
 */
import type { IdempotencyStore } from "@casebook/infra/sql/idempotency-store";
import type { Database } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { ShortDomain } from "../config.ts";
import type { ResolvedLink } from "../domain/redirect-decision.ts";
import type { TargetVerifier } from "../domain/target-verifier.ts";
import type { SystemMetrics } from "../metrics.ts";
import type { LinkResolver } from "../store/cached-link-reader.ts";
import type { LinkRepository, LinkView } from "../store/link-repository.ts";
import type { CreateLimiter } from "./create-limiter.ts";

/** Where generated codes come from: the counter scheme (domain/counter-codes.ts). */
export interface CodeSource {
  next(): Promise<string>;
}

/** The read path, with the hook an edit through this process uses to drop a cached link (this LRU, and the edge's entry when one is configured). */
export interface ReadPath extends LinkResolver {
  forget(domain: string, code: string): void | Promise<void>;
  /** The link from memory without waiting, when this read path has a cache (the redirect's fast path). */
  peek?(domain: string, code: string): ResolvedLink | undefined;
}

export interface LinksContext {
  readonly links: LinkRepository;
  readonly reader: ReadPath;
  readonly codes: CodeSource;
  readonly verifier: TargetVerifier;
  readonly domains: readonly ShortDomain[];
  readonly clock: Clock;
  readonly defaultCacheMaxAgeS: number;
  readonly limiter: CreateLimiter;
  readonly metrics: SystemMetrics;
  /** Where an Idempotency-Key's create commits with its stored response (store/idempotency-keys.ts). */
  readonly db: Database;
  readonly idempotency: IdempotencyStore;
}

/** The short domain a link is on, by its host; undefined when the service does not serve it. */
export function domainOf(domains: readonly ShortDomain[], host: string): ShortDomain | undefined {
  const lower = host.toLowerCase();
  return domains.find((domain) => domain.host === lower);
}

/** A link as the API shows it. */
export function toLinkJson(link: LinkView, domains: readonly ShortDomain[]) {
  const origin = domainOf(domains, link.domain)?.origin ?? `https://${link.domain}`;
  return {
    domain: link.domain,
    code: link.code,
    shortUrl: `${origin}/${link.code}`,
    url: link.target,
    status: link.status,
    cacheMaxAgeS: link.cacheMaxAgeS,
    forwardQuery: link.forwardQuery,
    isAlias: link.isAlias,
    tags: link.tags,
    expiresAt: link.expiresAt?.toISOString() ?? null,
    disabled: link.disabledAt !== null,
    disabledReason: link.disabledReason,
    createdAt: link.createdAt.toISOString(),
    updatedAt: link.updatedAt.toISOString(),
  };
}
