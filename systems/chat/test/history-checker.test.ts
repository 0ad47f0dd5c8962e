/**
 * The checker finds each anomaly it defines, and nothing in a clean history (CH-01's
 * guarantee, as the fault runs check it).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { checkHistories } from "../src/domain/history-checker.ts";

const d = (id: string, seq: string) => ({ chatId: "c", id, seq });

test("CH-01 the history checker: a clean history has no anomaly; each kind is found", () => {
  const acknowledged = [
    { chatId: "c", id: "a" },
    { chatId: "c", id: "b" },
    { chatId: "c", id: "x" },
  ];
  const clean = checkHistories({
    acknowledged: acknowledged.slice(0, 2),
    histories: [{ client: "1", chats: ["c"], displayed: [d("a", "1"), d("b", "2")] }],
  });
  assert.deepEqual(clean, []);
  const found = checkHistories({
    acknowledged,
    histories: [
      { client: "dup", chats: ["c"], displayed: [d("a", "1"), d("b", "2"), d("b", "2"), d("x", "3")] },
      { client: "hole", chats: ["c"], displayed: [d("a", "1"), d("x", "3")] },
      { client: "order", chats: ["c"], displayed: [d("b", "2"), d("a", "1"), d("x", "3")] },
    ],
  });
  assert.deepEqual(
    found.map((a) => `${a.client}:${a.kind}`).sort(),
    [
      "dup:duplicate",
      "dup:order",
      "hole:lost",
      "hole:skipped-offset",
      "order:order",
      "order:skipped-offset",
    ].sort(),
  );
});
