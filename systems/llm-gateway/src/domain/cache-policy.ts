/**
 * Which requests the semantic cache may answer (LG-12) and what an entry is keyed by
 * (LG-11). Only deterministic requests: `temperature` 0 asked explicitly (OpenAI's default is
 * 1), no tools (a tool call may act on the world: its answer must not be replayed), no
 * logprobs, and not a request the client marked `Cache-Control: no-store` (an answer
 * depending on data of the moment). An entry's scope is everything but the messages — the
 * logical model and every other parameter — so a lookup only compares prompts asked the
 * same way; the prompt compared is the conversation's text, role by role.
 *
 * @example
 * cacheDecision({ model: "m", messages, temperature: 0 }, undefined); // { cacheable: true }
 * cacheDecision({ model: "m", messages }, undefined); // { cacheable: false, why: "temperature is not 0" }
 */
import { createHash } from "node:crypto";

export interface CacheableRequest {
  readonly model: string;
  readonly messages: readonly { role: string; content?: unknown }[];
  readonly temperature?: number | null;
  readonly tools?: readonly unknown[];
  readonly functions?: unknown;
  readonly logprobs?: boolean | null;
  readonly [field: string]: unknown;
}

export type CacheDecision = { cacheable: true } | { cacheable: false; why: string };

export function cacheDecision(body: CacheableRequest, cacheControl: string | undefined): CacheDecision {
  if (cacheControl !== undefined && /\bno-store\b/i.test(cacheControl))
    return { cacheable: false, why: "Cache-Control: no-store" };
  if (body.temperature !== 0) return { cacheable: false, why: "temperature is not 0" };
  if (body.tools !== undefined && body.tools.length > 0) return { cacheable: false, why: "tools" };
  if (body.logprobs === true) return { cacheable: false, why: "logprobs" };
  return { cacheable: true };
}

/** Fields that say how an answer is delivered or who asked, not what is asked. */
const NOT_IN_SCOPE = new Set(["messages", "stream", "stream_options", "user", "metadata", "store"]);

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  );
}

/** sha256 (hex) of the request without its messages and delivery fields. */
export function cacheScope(body: CacheableRequest): string {
  const rest = Object.fromEntries(Object.entries(body).filter(([key]) => !NOT_IN_SCOPE.has(key)));
  return createHash("sha256")
    .update(JSON.stringify(canonical(rest)))
    .digest("hex");
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) =>
      typeof (part as { text?: unknown })?.text === "string" ? (part as { text: string }).text : "",
    )
    .join(" ");
}

/** The conversation as one text: a user's message as written, any other `role: content`. */
export function promptText(messages: CacheableRequest["messages"]): string {
  return messages
    .map((m) => (m.role === "user" ? textOf(m.content) : `${m.role}: ${textOf(m.content)}`))
    .join("\n");
}
