/**
 * The relay's lean read of a chunk (`countChunk`, no JSON.parse for OpenAI's own layout) says
 * what the whole read (`readChunk`) says of kind, content deltas and usage — on every chunk
 * the simulator writes, with any content, and on the layouts it must hand to the whole read.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { type ChunkCounts, countChunk, dataOf, readChunk } from "../src/domain/sse-events.ts";
import * as openai from "../src/sim/openai-wire.ts";

/** Kind, content deltas and usage only (a lean read handing over to the whole read returns all of it). */
function counts(info: ChunkCounts): ChunkCounts {
  if (info.kind === "chunk") return { kind: "chunk", contentDeltas: info.contentDeltas };
  return info;
}

function agrees(data: string | undefined): void {
  assert.deepEqual(counts(countChunk(data)), counts(readChunk(data)), data);
}

const head = (includeUsage: boolean): openai.CompletionHead => ({
  id: "chatcmpl-1",
  created: 1_733_230_000,
  model: "gpt-4o-mini",
  includeUsage,
});

test("property: on every chunk the simulator writes, with any content, the lean read agrees with the whole read", () => {
  fc.assert(
    fc.property(fc.string({ unit: "binary" }), fc.boolean(), (content, includeUsage) => {
      const h = head(includeUsage);
      for (const chunk of [
        openai.roleChunk(h),
        openai.contentChunk(h, content),
        openai.toolArgsChunk(h, content),
        openai.toolCallStartChunk(h, { id: "call_1", name: "f" }, content),
        openai.finishChunk(h, "stop"),
        openai.usageChunk(h, openai.usageOf(12, 40, 3)),
      ]) {
        agrees(dataOf(openai.sseEvent(chunk)));
      }
    }),
    { numRuns: 300 },
  );
});

test("the layouts the lean read hands to the whole read, and what both say", () => {
  const cases: Array<[string, ChunkCounts]> = [
    ['{"choices":[{"delta":{"content":"hi"}}],"usage":null}', { kind: "chunk", contentDeltas: 1 }],
    ['{"choices":[{"delta":{"content":""}}]}', { kind: "chunk", contentDeltas: 0 }],
    ['{"choices":[{"delta":{"content":null}}]}', { kind: "chunk", contentDeltas: 0 }],
    // Two choices (n = 2): one delta each.
    [
      '{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}',
      { kind: "chunk", contentDeltas: 2 },
    ],
    // A space after the colon, content not first in its delta, content outside a delta.
    ['{"choices":[{"delta":{"content": "hi"}}]}', { kind: "chunk", contentDeltas: 1 }],
    ['{"choices":[{"delta":{"role":"assistant","content":"hi"}}]}', { kind: "chunk", contentDeltas: 1 }],
    ['{"choices":[{"delta":{"role":"tool","content":"hi"}}]}', { kind: "chunk", contentDeltas: 1 }],
    ['{"choices":[{"delta":{"refusal":null,"content":"hi"}}]}', { kind: "chunk", contentDeltas: 1 }],
    [
      '{"choices":[{"delta":{},"logprobs":{"content":[{"token":"a"}]}}]}',
      { kind: "chunk", contentDeltas: 0 },
    ],
    ['{"choices":[{"message":{"content":"hi"},"delta":{}}]}', { kind: "chunk", contentDeltas: 0 }],
    // The words as text are text, not keys.
    [
      '{"choices":[{"delta":{"content":"\\"content\\":\\"x\\" \\"usage\\""}}]}',
      { kind: "chunk", contentDeltas: 1 },
    ],
    [
      '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}',
      { kind: "usage", usage: { promptTokens: 3, completionTokens: 4, cachedPromptTokens: 0 } },
    ],
    ['{"error":{"message":"boom"}}', { kind: "error", error: { message: "boom" } }],
    ["[DONE]", { kind: "done" }],
    ["not json", { kind: "other" }],
  ];
  for (const [data, expected] of cases) {
    assert.deepEqual(counts(countChunk(data)), expected, data);
    agrees(data);
  }
  agrees(undefined);
});
