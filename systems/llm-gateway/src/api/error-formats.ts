/**
 * The error shapes LLM clients read, as infra's per-path error formats (`ErrorFormat`): the
 * shared strict edge decides status, code, headers and the log line; these write the bytes.
 * Under `/v1/messages`, Anthropic's `{"type":"error","error":{"type","message"}}`; under
 * `/v1/chat/` and `/v1/models`, OpenAI's `{"error":{"message","type","param","code"}}` — the official
 * SDKs read `error.message` and `error.code` from there and throw their typed errors
 * (`RateLimitError`, `BadRequestError`). Both keep the house's `code` and the field errors,
 * so nothing a problem+json says is lost: `param` is the first field at fault in the
 * request's own terms (`messages[0].role`), `errors` the full list.
 *
 * @example
 * createService({ name: "llm-gateway", version, errorFormats: llmErrorFormats });
 */
import type { ErrorFormat } from "@casebook/infra/http/error-handling";
import type { Problem } from "@casebook/infra/http/problem";
import { anthropicErrorType } from "../sim/anthropic-wire.ts";

/** OpenAI's `error.type` for a status: what its SDKs and users branch on. */
export function openAiErrorType(status: number): string {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

/** `/body/messages/0/role` → `messages[0].role`: the field as the request names it. */
export function paramOf(pointer: string): string {
  const segments = pointer
    .replace(/^\/(body|querystring|params|headers)/, "")
    .split("/")
    .slice(1);
  let param = "";
  for (const segment of segments) {
    const name = segment.replaceAll("~1", "/").replaceAll("~0", "~");
    param += /^\d+$/.test(name) ? `[${name}]` : param === "" ? name : `.${name}`;
  }
  return param;
}

function firstParam(problem: Problem): string | null {
  const errors = problem.errors as Array<{ field?: unknown }> | undefined;
  const field = Array.isArray(errors) ? errors[0]?.field : problem.param;
  return typeof field === "string" ? (field.startsWith("/") ? paramOf(field) : field) : null;
}

/** The OpenAI error body for a problem: the SDK's message, type, param and code, plus the house's extras. */
export function openAiErrorOf(problem: Problem) {
  const {
    type: _t,
    title: _ti,
    instance: _i,
    detail,
    code,
    status,
    requestId,
    openAiCode,
    ...extensions
  } = problem;
  return {
    error: {
      message: detail,
      type: openAiErrorType(status),
      param: firstParam(problem),
      // The house code, lower case, unless the error names OpenAI's own (`model_not_found`).
      code: typeof openAiCode === "string" ? openAiCode : code.toLowerCase(),
      status,
      requestId,
      ...extensions,
    },
  };
}

/** OpenAI's shape on the path of each OpenAI-compatible route (the admin API keeps problem+json). */
export function openAiErrorFormat(pathPrefix: string): ErrorFormat {
  return {
    pathPrefix,
    contentType: "application/json; charset=utf-8",
    body: (problem) => JSON.stringify(openAiErrorOf(problem)),
  };
}

export const anthropicErrorFormat: ErrorFormat = {
  pathPrefix: "/v1/messages",
  contentType: "application/json; charset=utf-8",
  body: (problem) => {
    const param = firstParam(problem);
    return JSON.stringify({
      type: "error",
      error: {
        type: anthropicErrorType(problem.status),
        // Anthropic's SDKs show only the message: it names the field at fault.
        message:
          param === null || problem.detail.includes(param) ? problem.detail : `${problem.detail} (${param})`,
        code: problem.code,
        param,
        requestId: problem.requestId,
      },
    });
  },
};

export const llmErrorFormats: readonly ErrorFormat[] = [
  anthropicErrorFormat,
  openAiErrorFormat("/v1/chat/"),
  openAiErrorFormat("/v1/models"),
];
