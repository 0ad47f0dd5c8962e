/**
 * The provider simulator's errors, as a provider answers them (in OpenAI's or Anthropic's
 * error shape, by path: `api/error-formats.ts`); `openAiCode` is the code the real API
 * puts in `error.code`.
 */
import { defineErrors } from "@casebook/kit/errors";

export const providerErrors = defineErrors({
  PROVIDER_MODEL_NOT_FOUND: {
    status: 404,
    message: "The model does not exist or you do not have access to it; list them at GET /v1/models.",
  },
  PROVIDER_MAX_TOKENS_TOO_LARGE: {
    status: 400,
    message: "max_tokens is above this model's output limit; lower it.",
  },
  PROVIDER_RATE_LIMITED: {
    status: 429,
    message: "Rate limit reached for requests (simulated); retry after the time in Retry-After.",
  },
  PROVIDER_SERVER_ERROR: {
    status: 500,
    message: "The server had an error while processing your request (simulated); retry.",
  },
  PROVIDER_UPSTREAM_FAILED: {
    status: 502,
    message: "Bad gateway (simulated); nothing was generated; retry.",
  },
  PROVIDER_OVERLOADED: {
    status: 503,
    message: "The engine is currently overloaded (simulated); retry with backoff.",
  },
  PROVIDER_OUTAGE: {
    status: 503,
    message: "The provider is down (simulated outage); retry later.",
  },
});
