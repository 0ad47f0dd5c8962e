/**
 * The budget gate around one chat request (LG-05/06/07): before the upstream call, the
 * request's input tokens (the gateway's tokenizer) + its maximum output are reserved on every
 * limit it counts against, in one atomic script call; a refusal is 429 with the computed
 * Retry-After (or 400 when the request alone is above a whole budget: waiting would never
 * help). After the answer the provider's usage settles the reservation — the difference goes
 * back, or is charged as debt (`domain/token-window.ts`). When the provider reported nothing
 * (a cut stream, a client that left) the gateway's own count settles it: input + the content
 * chunks relayed. A counter that cannot be reached fails closed (503): admitting unmetered
 * traffic is what an exact budget is for preventing.
 *
 * @example
 * const held = await reserveBudget(budgets, { tenant, model, messages, maxOutputTokens });
 * // … the upstream call …
 * await settleBudget(budgets, held, usage.promptTokens + usage.completionTokens, log);
 */
import type { FastifyBaseLogger } from "fastify";
import {
  type BudgetPlan,
  planBudget,
  planDestination,
  type SharedLimits,
  settleLines,
  type TenantLimits,
} from "../domain/budget-plan.ts";
import { countInputTokens } from "../domain/input-tokens.ts";
import type { Deployment, ServedModel } from "../domain/model-catalog.ts";
import { errors } from "../errors.ts";
import type { BudgetStore, Reservation } from "../store/budget-store.ts";

export interface BudgetContext {
  readonly store: BudgetStore;
  readonly limits: SharedLimits;
  readonly windowMs: number;
  /**
   * When the counter cannot be reached: `closed` refuses (503: nothing unmetered reaches the
   * provider), `open` lets the request through unmetered (counted by `onUnmetered`, and
   * never settled: its tokens are missing from every budget of that window).
   */
  readonly failMode?: "closed" | "open";
  readonly onUnmetered?: (what: "tokens" | "destination" | "spend", error: unknown) => void;
  /**
   * False = plain proxying (LLM_GATEWAY_BUDGETS=false, the bench's baseline row): no token
   * counting, no reservation, no settle — nothing is metered. Default true.
   */
  readonly enabled?: boolean;
}

/** The reservation of a request let through unmetered (fail open): nothing to settle. */
export const UNMETERED: Reservation = Object.freeze({
  allowed: true,
  windowId: -1,
  retryAfterMs: 0,
  refused: undefined,
});

/** Rethrows as LLM_BUDGET_UNAVAILABLE (fail closed), or reports and returns UNMETERED (fail open). */
function unavailable(
  context: BudgetContext,
  what: "tokens" | "destination" | "spend",
  error: unknown,
): Reservation {
  if (context.failMode !== "open") throw errors.create("LLM_BUDGET_UNAVAILABLE", { cause: error });
  context.onUnmetered?.(what, error);
  return UNMETERED;
}

/** What budgets off reserve: nothing (settled as UNMETERED: not at all). */
const NO_PLAN: BudgetPlan = Object.freeze({ lines: [], reservedTokens: 0 });

/** A reservation held for one request until it is settled. */
export interface HeldBudget {
  readonly plan: BudgetPlan;
  readonly reservation: Reservation;
  readonly inputTokens: number;
}

/** Which limit refused, for the client: its kind and scope, never another tenant's name. */
function limitName(key: string): string {
  const kind = key.endsWith(":rpm") ? "requests" : "tokens";
  if (key.startsWith("llm:dest:")) return `the provider's ${kind} per window for this model`;
  if (key.includes(":model:")) return `your ${kind} per window on this model`;
  return `your ${kind} per window`;
}

export async function reserveBudget(
  context: BudgetContext,
  request: {
    tenant: TenantLimits;
    model: ServedModel;
    messages: readonly { role: string; content?: unknown }[];
    maxOutputTokens: number;
  },
): Promise<HeldBudget> {
  if (context.enabled === false) return { plan: NO_PLAN, reservation: UNMETERED, inputTokens: 0 };
  const inputTokens = countInputTokens(request.messages);
  const plan = planBudget({ ...request, limits: context.limits, inputTokens });
  let reservation: Reservation;
  try {
    reservation = await context.store.reserve(plan.lines, { windowMs: context.windowMs });
  } catch (error) {
    reservation = unavailable(context, "tokens", error);
  }
  if (reservation.allowed) return { plan, reservation, inputTokens };
  const refused = reservation.refused;
  const which = refused === undefined ? "a budget" : limitName(refused.key);
  if (reservation.retryAfterMs < 0) {
    throw errors.create("LLM_REQUEST_OVER_BUDGET", {
      detail: `This request needs ${plan.reservedTokens} tokens (${inputTokens} in + ${request.maxOutputTokens} max out), more than ${which} (${refused?.limit}); lower max_tokens.`,
      fields: {
        param: "max_tokens",
        openAiCode: "context_length_exceeded",
        reservedTokens: plan.reservedTokens,
      },
    });
  }
  throw errors.create("LLM_BUDGET_EXCEEDED", {
    detail: `Rate limit reached: ${which} (${refused?.limit}) has no room for this request (${plan.reservedTokens} tokens reserved); retry after the time in Retry-After.`,
    fields: { retryAfterMs: reservation.retryAfterMs, openAiCode: "rate_limit_exceeded" },
  });
}

/**
 * The chosen deployment's own quota (LG-09), reserved for the same tokens as the tenant's:
 * `undefined` when it has no room (the router tries the next deployment; `retryAfterMs` says
 * when this one will), a held budget otherwise. No quota configured: nothing to reserve.
 */
export async function reserveDestination(
  context: BudgetContext,
  deployment: Deployment,
  tenantHeld: HeldBudget,
): Promise<{ held: HeldBudget } | { held: undefined; retryAfterMs: number }> {
  const plan = planDestination({
    deployment,
    limits: context.limits,
    reservedTokens: tenantHeld.plan.reservedTokens,
  });
  const none: Reservation = { allowed: true, windowId: 0, retryAfterMs: 0, refused: undefined };
  if (plan.lines.length === 0)
    return { held: { plan, reservation: none, inputTokens: tenantHeld.inputTokens } };
  let reservation: Reservation;
  try {
    reservation = await context.store.reserve(plan.lines, { windowMs: context.windowMs });
  } catch (error) {
    reservation = unavailable(context, "destination", error);
  }
  if (!reservation.allowed) {
    // Never fits (the request alone is above the destination's window): no wait helps this one.
    const retryAfterMs = reservation.retryAfterMs < 0 ? Number.POSITIVE_INFINITY : reservation.retryAfterMs;
    return { held: undefined, retryAfterMs };
  }
  return { held: { plan, reservation, inputTokens: tenantHeld.inputTokens } };
}

/** Replaces the reservation by `usedTokens`; a failure is logged, never thrown (the answer is already out). */
export async function settleBudget(
  context: BudgetContext,
  held: HeldBudget,
  usedTokens: number,
  log: FastifyBaseLogger,
): Promise<void> {
  if (held.reservation === UNMETERED) return;
  try {
    await context.store.settle(held.reservation, settleLines(held.plan, usedTokens), {
      windowMs: context.windowMs,
    });
  } catch (error) {
    // The reservation stays as debited: budgets err on the side of the limit, never past it.
    log.warn({ err: error, usedTokens }, "budget settle failed; the reservation stays charged");
  }
}

/** A money reservation (a spend budget): the most the request can cost, held until its cost is known. */
export interface HeldSpend {
  readonly key: string;
  readonly limit: number;
  readonly reservedNanoUsd: number;
  readonly reservation: Reservation;
}

/**
 * The tenant's money budget per spend window (as LiteLLM's `max_budget` per key): the most
 * the request can cost is reserved in the same atomic script as tokens are (a separate call:
 * its window is the spend window), refused with 429 `insufficient_quota` and the time to the
 * window's end; settled from the request's cost.
 */
export async function reserveSpend(
  context: BudgetContext & { spendWindowMs: number },
  tenant: TenantLimits,
  /** The most the request can cost; asked only of a tenant with a spend budget. */
  maxCostOf: () => number,
): Promise<HeldSpend | undefined> {
  const limit = tenant.spendLimitNanoUsd;
  if (limit === undefined) return undefined;
  const key = `llm:{${tenant.id}}:spend`;
  const maxCostNanoUsd = maxCostOf();
  const cost = Math.min(maxCostNanoUsd, limit);
  let reservation: Reservation;
  try {
    reservation = await context.store.reserve([{ key, limit, cost }], { windowMs: context.spendWindowMs });
  } catch (error) {
    reservation = unavailable(context, "spend", error);
  }
  if (!reservation.allowed) {
    throw errors.create("LLM_SPEND_EXCEEDED", {
      detail: `Your spend budget ($${limit / 1e9}) has no room for this request (up to $${(maxCostNanoUsd / 1e9).toFixed(6)}); it renews at the end of the spend window.`,
      fields: { retryAfterMs: Math.max(1_000, reservation.retryAfterMs), openAiCode: "insufficient_quota" },
    });
  }
  return { key, limit, reservedNanoUsd: cost, reservation };
}

export async function settleSpend(
  context: BudgetContext & { spendWindowMs: number },
  held: HeldSpend | undefined,
  costNanoUsd: number,
  log: FastifyBaseLogger,
): Promise<void> {
  if (held === undefined || held.reservation === UNMETERED) return;
  try {
    await context.store.settle(
      held.reservation,
      [{ key: held.key, limit: held.limit, delta: costNanoUsd - held.reservedNanoUsd }],
      { windowMs: context.spendWindowMs },
    );
  } catch (error) {
    log.warn({ err: error, costNanoUsd }, "spend settle failed; the reservation stays charged");
  }
}
