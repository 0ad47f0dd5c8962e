/**
 * Which limits one chat request is counted against, and for how much (LG-05, LG-06, and
 * LG-09's destination quota in `planDestination`): requests (cost 1) and tokens (input counted by the gateway's tokenizer
 * + the maximum output asked, or the gateway's bound when none is asked — the reservation is
 * always for the maximum, since nobody knows the output length before generation), each per
 * tenant, per tenant and model, and per destination (the provider's own quota for one
 * deployment, shared by every tenant). A limit of 0 is off. Keys put the tenant (or the
 * deployment) in a hash tag, so the lines of one reservation share a Redis Cluster slot.
 *
 * @example
 * const plan = planBudget({ tenant: { id: "acme", rpm: 60, tpm: 100_000 }, model, limits, inputTokens: 2_000, maxOutputTokens: 4_000 });
 * plan.lines; // [{ key: "llm:{acme}:rpm", limit: 60, cost: 1 }, { key: "llm:{acme}:tpm", limit: 100000, cost: 6000 }, …]
 */
import type { Deployment, ServedModel } from "./model-catalog.ts";

export interface TenantLimits {
  readonly id: string;
  readonly rpm: number;
  readonly tpm: number;
  /** Money per spend window, in nano-dollars; undefined = no money budget. */
  readonly spendLimitNanoUsd?: number | undefined;
  /** LG-10: false = an answer from another model is never served to this tenant (default true). */
  readonly acceptsModelFallback?: boolean | undefined;
}

/** Per tenant-and-model and per destination limits (0 = off), from configuration. */
export interface SharedLimits {
  readonly modelRpm: number;
  readonly modelTpm: number;
  readonly destinationRpm: number;
  readonly destinationTpm: number;
}

export interface PlannedLine {
  readonly key: string;
  readonly limit: number;
  readonly cost: number;
  /** Token lines are settled from the provider's usage; request lines are not. */
  readonly tokens: boolean;
}

export interface BudgetPlan {
  readonly lines: readonly PlannedLine[];
  /** What each token line reserved: input + maximum output. */
  readonly reservedTokens: number;
}

export function planBudget(input: {
  tenant: TenantLimits;
  model: ServedModel;
  limits: SharedLimits;
  inputTokens: number;
  maxOutputTokens: number;
}): BudgetPlan {
  const { tenant, model, limits } = input;
  const reservedTokens = input.inputTokens + input.maxOutputTokens;
  const candidates: PlannedLine[] = [
    { key: `llm:{${tenant.id}}:rpm`, limit: tenant.rpm, cost: 1, tokens: false },
    { key: `llm:{${tenant.id}}:tpm`, limit: tenant.tpm, cost: reservedTokens, tokens: true },
    { key: `llm:{${tenant.id}}:model:${model.name}:rpm`, limit: limits.modelRpm, cost: 1, tokens: false },
    {
      key: `llm:{${tenant.id}}:model:${model.name}:tpm`,
      limit: limits.modelTpm,
      cost: reservedTokens,
      tokens: true,
    },
  ];
  return { lines: candidates.filter((line) => line.limit > 0), reservedTokens };
}

/**
 * The destination's own quota (LG-09, LG-17: the provider's limit for one deployment, every
 * tenant together), reserved apart from the tenant's once a deployment is chosen. Its keys
 * carry the deployment in their hash tag: one deployment's lines share a Redis Cluster slot,
 * and a tenant's do, but a tenant and a deployment need not (one script touches one slot).
 */
export function planDestination(input: {
  deployment: Deployment;
  limits: SharedLimits;
  reservedTokens: number;
}): BudgetPlan {
  const { deployment, limits, reservedTokens } = input;
  const tag = `{dest:${deployment.id}}`;
  const candidates: PlannedLine[] = [
    { key: `llm:${tag}:rpm`, limit: limits.destinationRpm, cost: 1, tokens: false },
    { key: `llm:${tag}:tpm`, limit: limits.destinationTpm, cost: reservedTokens, tokens: true },
  ];
  return { lines: candidates.filter((line) => line.limit > 0), reservedTokens };
}

/** The settle of a plan: each token line gets usage − reservation. */
export function settleLines(plan: BudgetPlan, usedTokens: number) {
  return plan.lines
    .filter((line) => line.tokens)
    .map((line) => ({ key: line.key, limit: line.limit, delta: usedTokens - plan.reservedTokens }));
}
