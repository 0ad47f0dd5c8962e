/**
 * The provider simulator's knobs: infra's generic fault knobs (latency, 5xx before
 * processing, outages) and, per model, what an LLM provider does that a plain service does
 * not — time to first token, tokens per second, how long its answers are, 429s, errors,
 * streams cut mid-answer and pauses between two tokens (LG-03, LG-08). A model missing from
 * `models` is unknown to the provider (404 `model_not_found`).
 *
 * @example
 * const behaviour = mergeBehaviour(defaultBehaviour, { models: { "gpt-4o-mini": { ...defaultModelProfile, ttftMs: 900 } } });
 * profileOf(behaviour, "gpt-4o-mini")?.ttftMs; // 900
 */
import { faultKnobsSchemaProperties, numberKnob } from "@casebook/infra/http/simulator";
import {
  checkBounds,
  defaultFaultKnobs,
  type FaultKnobs,
  mergeFaultKnobs,
} from "@casebook/infra/http/simulator-faults";

export interface ModelProfile {
  /** Request accepted → first content token. */
  readonly ttftMs: number;
  /** Tokens generated per second after the first. */
  readonly tokensPerS: number;
  /** Tokens in an answer when `max_tokens` does not cut it shorter (finish_reason `length` then). */
  readonly answerTokens: number;
  /** Largest `max_tokens` the model accepts. */
  readonly maxOutputTokens: number;
  /** Probability a call fails with a 500 `server_error` before generating. */
  readonly errorRate: number;
  /** Probability a call is refused with 429 `rate_limit_exceeded` and a Retry-After. */
  readonly rateLimitRate: number;
  /** A stream is cut (connection reset, no final event) after this many tokens; 0 = never. */
  readonly cutAfterTokens: number;
  /** After this many tokens the model pauses `pauseMs` once; 0 = never. */
  readonly pauseAfterTokens: number;
  readonly pauseMs: number;
}

export interface ProviderBehaviour extends FaultKnobs {
  /** The models this provider serves, by name. */
  readonly models: Readonly<Record<string, ModelProfile>>;
}

export const defaultModelProfile: ModelProfile = Object.freeze({
  ttftMs: 50,
  tokensPerS: 200,
  answerTokens: 40,
  maxOutputTokens: 16_384,
  errorRate: 0,
  rateLimitRate: 0,
  cutAfterTokens: 0,
  pauseAfterTokens: 0,
  pauseMs: 0,
});

/** The models a fresh simulator serves (names only: the simulator is no model). */
export const defaultModelNames = ["gpt-4o", "gpt-4o-mini", "claude-sonnet-4", "claude-haiku-4"] as const;

export const defaultBehaviour: ProviderBehaviour = Object.freeze({
  ...defaultFaultKnobs,
  models: Object.freeze(Object.fromEntries(defaultModelNames.map((name) => [name, defaultModelProfile]))),
});

/** Bounds of each model knob, shared by the JSON schema and the merge. */
export const modelProfileBounds = {
  ttftMs: { min: 0, max: 600_000 },
  tokensPerS: { min: 1, max: 100_000 },
  answerTokens: { min: 0, max: 1_000_000 },
  maxOutputTokens: { min: 1, max: 1_000_000 },
  errorRate: { min: 0, max: 1 },
  rateLimitRate: { min: 0, max: 1 },
  cutAfterTokens: { min: 0, max: 1_000_000 },
  pauseAfterTokens: { min: 0, max: 1_000_000 },
  pauseMs: { min: 0, max: 600_000 },
} as const;

/** A bound on the model table: a test configures a handful. */
export const maxModels = 100;

function profileSchema(required: boolean) {
  const properties = Object.fromEntries(
    Object.entries(modelProfileBounds).map(([knob, bounds]) => [
      knob,
      numberKnob(bounds, !knob.endsWith("Rate")),
    ]),
  );
  return {
    type: "object",
    additionalProperties: false,
    ...(required ? { required: Object.keys(modelProfileBounds) } : {}),
    properties,
  } as const;
}

/** A whole profile (GET /admin/behaviour, PUT with `models`). */
export const modelProfileSchema = profileSchema(true);
/** Some knobs of one model (PUT /admin/models/:model). */
export const modelPatchSchema = profileSchema(false);

export const behaviourSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    ...faultKnobsSchemaProperties,
    models: {
      type: "object",
      maxProperties: maxModels,
      propertyNames: { pattern: "^[A-Za-z0-9._:/-]{1,100}$" },
      additionalProperties: modelProfileSchema,
    },
  },
} as const;

export function mergeModelProfile(current: ModelProfile, patch: Partial<ModelProfile>): ModelProfile {
  const next = { ...current, ...patch };
  checkBounds(next, modelProfileBounds);
  return Object.freeze(next);
}

/** `current` with `patch` applied (`models` replaces the whole table); RangeError names a knob out of bounds. */
export function mergeBehaviour(
  current: ProviderBehaviour,
  patch: Partial<ProviderBehaviour>,
): ProviderBehaviour {
  const { models, ...knobs } = patch;
  const next = mergeFaultKnobs<ProviderBehaviour>(current, knobs);
  if (models === undefined) return next;
  const entries = Object.entries(models);
  if (entries.length > maxModels) throw new RangeError(`models holds at most ${maxModels} models`);
  for (const [, profile] of entries) checkBounds(profile, modelProfileBounds);
  return Object.freeze({ ...next, models: Object.freeze({ ...models }) });
}

export function faultKnobsOf(behaviour: ProviderBehaviour): FaultKnobs {
  const { models: _models, ...knobs } = behaviour;
  return knobs;
}

export function profileOf(behaviour: ProviderBehaviour, model: string): ModelProfile | undefined {
  return Object.hasOwn(behaviour.models, model) ? behaviour.models[model] : undefined;
}
