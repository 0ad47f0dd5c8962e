/**
 * The one error registry of llm-gateway: stable `AREA_WHAT` codes, each with the HTTP status
 * the API answers with and a message that tells the reader what to do, grouped by area. On
 * the OpenAI-compatible routes they are written in OpenAI's error shape
 * (`api/error-formats.ts`; `openAiCode` in a field is the code OpenAI's own API would put in
 * `error.code`); `test/errors.test.ts` walks every code.
 *
 * @example
 * throw errors.create("LLM_MODEL_NOT_FOUND", { detail: "The model `gpt-5` does not exist.", fields: { param: "model" } });
 */
import { defineErrors } from "@casebook/kit/errors";

export const errors = defineErrors({
  // requests: what the client sent, refused before any upstream call (nothing reserved)
  LLM_MODEL_NOT_FOUND: {
    status: 404,
    message: "The model is not served by this gateway; list the served models at GET /v1/models.",
  },
  LLM_MAX_TOKENS_TOO_LARGE: {
    status: 400,
    message: "max_tokens (or max_completion_tokens) is above the model's output limit; lower it.",
  },
  LLM_PARAMETER_UNSUPPORTED: {
    status: 400,
    message: "A parameter value this gateway does not support was sent; remove it or use a supported value.",
  },
  // budgets (LG-05/06/07): the tenant's, the model's or the destination's requests or tokens per window
  LLM_BUDGET_EXCEEDED: {
    status: 429,
    message:
      "A request or token budget has no room for this request now; retry after Retry-After, or ask fewer max_tokens.",
  },
  LLM_REQUEST_OVER_BUDGET: {
    status: 400,
    message:
      "This request alone needs more tokens than its whole budget per window; lower max_tokens or shorten the prompt.",
  },
  LLM_SPEND_EXCEEDED: {
    status: 429,
    message:
      "Your spend budget for this window is used up; it renews at the end of the window (Retry-After).",
  },
  LLM_BUDGET_UNAVAILABLE: {
    status: 503,
    message: "The token counter cannot be reached, and budgets fail closed; retry shortly.",
  },
  // routing (LG-08/09): the destinations behind a model
  LLM_NO_CAPACITY: {
    status: 429,
    message:
      "No destination of this model has capacity now (breakers open, quotas full, the providers' own 429s); retry after Retry-After.",
  },
  // upstream: the provider behind the gateway
  LLM_UPSTREAM_RATE_LIMITED: {
    status: 429,
    message: "The provider refused the request for its own rate limit; retry after Retry-After.",
  },
  LLM_UPSTREAM_REJECTED: {
    status: 400,
    message: "The provider refused the request as invalid; the detail quotes its reason.",
  },
  LLM_UPSTREAM_FAILED: {
    status: 502,
    message: "The provider failed or could not be reached; nothing was generated for you; retry.",
  },
  LLM_UPSTREAM_TIMEOUT: {
    status: 504,
    message: "The provider did not start answering in time; retry, or use another model.",
  },
  LLM_STREAM_TRUNCATED: {
    status: 502,
    message: "The provider's stream ended before its end: the answer is incomplete; retry the request.",
  },
  LLM_GATEWAY_SHUTTING_DOWN: {
    status: 503,
    message:
      "The gateway is shutting down and this answer did not finish within its drain bound: the answer is incomplete; retry the request.",
  },
  LLM_EMBEDDINGS_INVALID: {
    status: 502,
    message:
      "The embeddings provider answered without a usable vector of the configured length; the request went upstream uncached.",
  },
  // admin
  LLM_TENANT_NOT_FOUND: { status: 404, message: "No tenant has this id; create it first." },
  LLM_TENANT_EXISTS: { status: 409, message: "A tenant with this id exists already; pick another id." },
  // bench (bench/main.ts): a flag that retyping fixes, exit code 2
  BENCH_ARGS_INVALID: { status: 400, message: "A bench flag is not valid; run the bench with --help." },
});

export type ErrorCode = keyof typeof errors.specs;
