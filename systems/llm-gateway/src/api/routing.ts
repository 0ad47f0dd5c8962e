/**
 * One request's walk down its model's chain of deployments (LG-08, LG-09, LG-10): in the
 * order `Destinations.candidates` gives (tier by tier, least loaded first), a deployment
 * whose breaker is open is skipped, then its own quota is reserved, then its breaker admits
 * the call; a provider failure before anything reached the client (5xx, 429, a reset, no
 * head in time) counts against the deployment and the next one is tried. The first answer
 * wins, and when it comes from another model or another tier the response says so (headers)
 * and the gateway records it (a log line and `llm_gateway_fallbacks_total`).
 *
 * A tenant (or a request) that does not accept another model's answer (LG-10's product
 * decision: `acceptsModelFallback` false) has the other models' deployments passed over: the
 * same model elsewhere still serves it, else it gets the error the model's own deployments
 * earned.
 *
 * Only when no deployment had capacity — every breaker open, every quota full, every
 * provider answering 429 — is the answer 429, with the soonest Retry-After among them; a
 * chain that failed otherwise ends with the last provider failure (502/504). A refusal of the
 * request itself (the provider's 4xx) is the client's and is not retried elsewhere.
 *
 * @example
 * const routed = await routeRequest(context, { model, held, ttft: true, signal, log }, (upstream, d) => upstream.stream(bodyFor(d), signal));
 * reply.headers(routeHeaders(model, routed));
 */
import type { FastifyBaseLogger } from "fastify";
import type { Admission, Destinations } from "../clients/destinations.ts";
import type { UpstreamClient } from "../clients/upstream-client.ts";
import type { Deployment, ServedModel } from "../domain/model-catalog.ts";
import { type FallbackKind, fallbackKind } from "../domain/route-order.ts";
import { errors } from "../errors.ts";
import type { SystemMetrics } from "../metrics.ts";
import { type BudgetContext, type HeldBudget, reserveDestination, settleBudget } from "./budgets.ts";

/** The deployment that answered, always sent. */
export const SERVED_BY_HEADER = "x-llm-gateway-served-by";
/** Sent only on a fallback (LG-10): `model` (another model answered) or `destination` (the same model elsewhere), and from which primary. */
export const FALLBACK_HEADER = "x-llm-gateway-fallback";

export interface RoutingContext {
  readonly destinations: Destinations;
  readonly budgets: BudgetContext;
  readonly metrics: SystemMetrics;
}

export interface Routed<T> {
  readonly answer: T;
  readonly admission: Admission;
  /** The deployment's own quota held for this request (settled with the tenant's). */
  readonly destinationHeld: HeldBudget;
  readonly fallback: FallbackKind;
  /** The deployments tried before this one answered, and why each was passed over. */
  readonly skipped: readonly { deployment: string; why: string }[];
}

/**
 * A request's own say on LG-10 (`false`: no other model's answer for this call). It only
 * narrows: a tenant that does not accept fallbacks is not widened by `true`.
 */
export const ACCEPT_MODEL_FALLBACK_HEADER = "x-llm-gateway-accept-model-fallback";

/** The header's value as a choice; anything but `true`/`false` is refused before anything is reserved. */
export function requestAcceptsModelFallback(value: string | string[] | undefined): boolean {
  if (value === undefined || value === "true") return true;
  if (value === "false") return false;
  throw errors.create("LLM_PARAMETER_UNSUPPORTED", {
    detail: `The header ${ACCEPT_MODEL_FALLBACK_HEADER} takes true or false, got ${JSON.stringify(value)}.`,
    fields: { param: ACCEPT_MODEL_FALLBACK_HEADER },
  });
}

/** Retry-After floor: a wait of 0 would invite an immediate retry into the same wall. */
const MIN_RETRY_AFTER_MS = 1_000;

export async function routeRequest<T>(
  context: RoutingContext,
  request: {
    model: ServedModel;
    held: HeldBudget;
    ttft: boolean;
    /** LG-10: false = deployments of another model are never tried. */
    acceptsModelFallback: boolean;
    signal: AbortSignal;
    log: FastifyBaseLogger;
  },
  call: (upstream: UpstreamClient, deployment: Deployment) => Promise<T>,
): Promise<Routed<T>> {
  const { destinations, budgets } = context;
  const { model, log } = request;
  const primary = model.tiers[0]?.[0] as Deployment;
  const skipped: { deployment: string; why: string }[] = [];
  let soonestMs = Number.POSITIVE_INFINITY;
  let lastFailure: unknown;
  const noCapacity = (deployment: Deployment, why: string, waitMs: number) => {
    skipped.push({ deployment: deployment.id, why });
    soonestMs = Math.min(soonestMs, waitMs);
  };
  for (const { deployment, tier } of destinations.candidates(model)) {
    if (!request.acceptsModelFallback && deployment.upstreamModel !== primary.upstreamModel) {
      skipped.push({ deployment: deployment.id, why: "another model: fallback not accepted" });
      continue;
    }
    if (destinations.isOpen(deployment)) {
      noCapacity(deployment, "breaker open", destinations.retryAfterMs(deployment));
      continue;
    }
    const quota = await reserveDestination(budgets, deployment, request.held);
    if (quota.held === undefined) {
      noCapacity(deployment, "destination quota full", quota.retryAfterMs);
      continue;
    }
    const admission = destinations.admit(deployment, { ttft: request.ttft });
    if (admission === undefined) {
      await settleBudget(budgets, quota.held, 0, log);
      noCapacity(deployment, "breaker probing", destinations.retryAfterMs(deployment));
      continue;
    }
    try {
      const answer = await call(admission.upstream, deployment);
      const fallback = fallbackKind(primary, deployment, tier);
      if (fallback !== "none") record(context, log, model, primary, deployment, fallback, skipped);
      return { answer, admission, destinationHeld: quota.held, fallback, skipped };
    } catch (error) {
      await settleBudget(budgets, quota.held, 0, log);
      if (request.signal.aborted || errors.is(error, "LLM_UPSTREAM_REJECTED")) {
        admission.release();
        throw error;
      }
      admission.failed();
      admission.release();
      context.metrics.upstreamFailures.inc({
        model: model.name,
        deployment: deployment.id,
        kind: failureKindOf(error),
      });
      if (errors.is(error, "LLM_UPSTREAM_RATE_LIMITED")) {
        noCapacity(deployment, "provider 429", Number(error.fields.retryAfterMs) || MIN_RETRY_AFTER_MS);
      } else {
        skipped.push({ deployment: deployment.id, why: errors.is(error) ? error.code : "failed" });
        lastFailure = error;
      }
    }
  }
  if (soonestMs === Number.POSITIVE_INFINITY) {
    if (lastFailure !== undefined) throw lastFailure;
    throw errors.create("LLM_REQUEST_OVER_BUDGET", {
      detail: `This request needs ${request.held.plan.reservedTokens} tokens, more than any destination of ${model.name} takes per window; lower max_tokens.`,
      fields: { param: "max_tokens", openAiCode: "context_length_exceeded" },
    });
  }
  throw errors.create("LLM_NO_CAPACITY", {
    detail: `No destination of ${model.name} has capacity now (${skipped.map((s) => `${s.deployment}: ${s.why}`).join("; ")}); retry after the time in Retry-After.`,
    fields: { retryAfterMs: Math.max(MIN_RETRY_AFTER_MS, soonestMs), openAiCode: "rate_limit_exceeded" },
  });
}

/** LG-16's kind of a provider failure: its 429, its 5xx, no head in time, or no answer at all. */
export function failureKindOf(error: unknown): "429" | "5xx" | "timeout" | "unreachable" {
  if (errors.is(error, "LLM_UPSTREAM_RATE_LIMITED")) return "429";
  if (errors.is(error, "LLM_UPSTREAM_TIMEOUT")) return "timeout";
  if (errors.is(error, "LLM_UPSTREAM_FAILED") && error.fields.upstreamStatus !== undefined) return "5xx";
  return "unreachable";
}

function record(
  context: RoutingContext,
  log: FastifyBaseLogger,
  model: ServedModel,
  primary: Deployment,
  served: Deployment,
  kind: FallbackKind,
  skipped: readonly { deployment: string; why: string }[],
): void {
  context.metrics.fallbacks.inc({ model: model.name, to: served.id, kind });
  log.warn(
    { model: model.name, primary: primary.id, servedBy: served.id, kind, skipped },
    "fallback: the request was served by another deployment",
  );
}

/** The response headers of a routed answer (LG-10: a fallback is declared to the client). */
export function routeHeaders(model: ServedModel, routed: Routed<unknown>): Record<string, string> {
  const served = routed.admission.deployment;
  const headers: Record<string, string> = { [SERVED_BY_HEADER]: served.id };
  const primary = model.tiers[0]?.[0] as Deployment;
  if (routed.fallback !== "none") headers[FALLBACK_HEADER] = `${routed.fallback}; from=${primary.id}`;
  return headers;
}
