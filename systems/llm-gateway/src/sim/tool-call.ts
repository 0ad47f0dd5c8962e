/**
 * The simulator answering with a tool call, as OpenAI's API does when a request offers
 * `tools`: the call goes to the tool `tool_choice` names, else the first one offered
 * (`tool_choice: "none"` answers in text); its arguments are a JSON object whose one string
 * field carries the generated tokens, so a stream sends them as argument fragments, paced
 * like text, that join into valid JSON once the call is whole.
 *
 * @example
 * const call = toolCallOf({ tools: [{ type: "function", function: { name: "lookup" } }] }, "call_1");
 * call?.name;              // "lookup"
 * ARGS_OPEN + fragment("a\"b") + ARGS_CLOSE; // '{"answer":"a\\"b"}'
 */

export interface ToolCall {
  readonly id: string;
  readonly name: string;
}

interface ToolsRequest {
  readonly tools?: ReadonlyArray<{ type?: string; function?: { name?: string } }> | null;
  readonly tool_choice?: string | { type?: string; function?: { name?: string } } | null;
}

/** Where the generated tokens go: `{"answer":"` … `"}`. */
export const ARGS_OPEN = '{"answer":"';
export const ARGS_CLOSE = '"}';

/** The call this request's answer makes, or undefined when it answers in text. */
export function toolCallOf(body: ToolsRequest, id: string): ToolCall | undefined {
  const tools = body.tools ?? [];
  if (tools.length === 0 || body.tool_choice === "none") return undefined;
  const chosen = typeof body.tool_choice === "object" ? body.tool_choice?.function?.name : undefined;
  const name = chosen ?? tools.find((tool) => typeof tool.function?.name === "string")?.function?.name;
  return name === undefined ? undefined : { id: `call_${id}`, name };
}

/** A generated token as a piece of the JSON string (escaped, no quotes). */
export function fragment(token: string): string {
  return JSON.stringify(token).slice(1, -1);
}
