/**
 * Creating a link, in the order that keeps bad input and abuse from ever being stored:
 *
 *   1. the fields (domain/link-rules.ts): url, alias, expiry, tags → LINK_INVALID naming the field;
 *   2. the key's creation budget (create-limiter.ts) → LINK_CREATE_RATE_LIMITED with retryAfterS;
 *   3. the verifier (domain/target-verifier.ts) → LINK_TARGET_BLOCKED with the reason (US-16);
 *   4. the code: an alias by conditional insert (US-18: taken → LINK_ALIAS_TAKEN, 409), or the
 *      next code of the counter scheme, inserted with no lookup (US-05).
 *
 * `prepareLink` runs steps 1–3 and takes the generated code (everything that may wait on
 * something else); `insertLink` is step 4's write alone, so a create with an Idempotency-Key
 * (link-routes.ts) makes it in one transaction with the stored response.
 *
 * @example
 * const link = await createLink(context, { workspaceId: "demo", keyPrefix: "usk_…" }, { url: "https://example.com" });
 */

import { CounterExhaustedError } from "../domain/counter-blocks.ts";
import {
  checkAlias,
  checkExpiry,
  checkTags,
  checkTarget,
  DEFAULT_REDIRECT_STATUS,
} from "../domain/link-rules.ts";
import { errors } from "../errors.ts";
import type { LinkRepository, LinkView, NewLink } from "../store/link-repository.ts";
import { domainOf, type LinksContext } from "./api-context.ts";
import type { CreateLinkBody } from "./link-schemas.ts";

export interface Caller {
  workspaceId: string;
  keyPrefix: string;
}

function checkFields(context: LinksContext, body: CreateLinkBody, nowMs: number) {
  const target = checkTarget(body.url);
  const domain = body.domain === undefined ? context.domains[0]! : domainOf(context.domains, body.domain);
  if (domain === undefined) {
    const reason = `not a domain of this service: use one of ${context.domains.map((d) => d.host).join(", ")}`;
    throw errors.create("LINK_INVALID", { detail: `domain: ${reason}`, fields: { field: "domain", reason } });
  }
  return {
    target,
    domain,
    alias: body.alias === undefined ? undefined : checkAlias(body.alias),
    expiresAt: body.expiresAt === undefined ? null : checkExpiry(body.expiresAt, nowMs),
    tags: checkTags(body.tags ?? []),
  };
}

async function nextCode(context: LinksContext): Promise<string> {
  try {
    return await context.codes.next();
  } catch (error) {
    if (error instanceof CounterExhaustedError) throw errors.create("CODE_SPACE_EXHAUSTED", { cause: error });
    throw error;
  }
}

/** A link checked and ready to insert: an alias's conditional insert, or a generated code's plain one. */
export type PreparedLink = NewLink;

export async function prepareLink(
  context: LinksContext,
  caller: Caller,
  body: CreateLinkBody,
): Promise<PreparedLink> {
  const nowMs = context.clock.nowMs();
  const fields = checkFields(context, body, nowMs);
  const waitMs = context.limiter.take(caller.keyPrefix, context.clock.monotonicMs());
  if (waitMs > 0) {
    context.metrics.createsRefused.inc({ reason: "rate_limited" });
    throw errors.create("LINK_CREATE_RATE_LIMITED", { fields: { retryAfterS: Math.ceil(waitMs / 1_000) } });
  }
  const verdict = await context.verifier.verify(fields.target);
  if (!verdict.allowed) {
    context.metrics.createsRefused.inc({ reason: "blocked" });
    throw errors.create("LINK_TARGET_BLOCKED", {
      detail: verdict.reason,
      fields: { field: "url", reason: verdict.reason },
    });
  }
  const link: Omit<NewLink, "code" | "isAlias"> = {
    domain: fields.domain.host,
    workspaceId: caller.workspaceId,
    target: fields.target.href,
    status: body.status ?? DEFAULT_REDIRECT_STATUS,
    cacheMaxAgeS: body.cacheMaxAgeS ?? context.defaultCacheMaxAgeS,
    forwardQuery: body.forwardQuery ?? true,
    tags: fields.tags,
    expiresAt: fields.expiresAt,
    nowMs,
  };
  if (fields.alias !== undefined) return { ...link, code: fields.alias, isAlias: true };
  return { ...link, code: await nextCode(context), isAlias: false };
}

/** Step 4's write, on `links` (the context's, or one on a transaction). */
export async function insertLink(
  context: LinksContext,
  links: LinkRepository,
  prepared: PreparedLink,
): Promise<LinkView> {
  if (prepared.isAlias) {
    const created = await links.insertAlias(prepared);
    if (!created) {
      throw errors.create("LINK_ALIAS_TAKEN", {
        fields: { field: "alias", alias: prepared.code, domain: prepared.domain },
      });
    }
    context.metrics.linksCreated.inc({ scheme: "alias" });
    return created;
  }
  const created = await links.insertGenerated(prepared);
  context.metrics.linksCreated.inc({ scheme: "generated" });
  return created;
}

export async function createLink(
  context: LinksContext,
  caller: Caller,
  body: CreateLinkBody,
): Promise<LinkView> {
  return insertLink(context, context.links, await prepareLink(context, caller, body));
}
