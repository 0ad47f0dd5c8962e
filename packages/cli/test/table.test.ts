import assert from "node:assert/strict";
import { test } from "node:test";
import { renderTable } from "../src/table.ts";

test("columns are as wide as their widest cell, with no trailing spaces", () => {
  assert.equal(
    renderTable(
      ["system", "url"],
      [
        ["rate-limiter", "http://127.0.0.1:8101"],
        ["chat", ""],
      ],
    ),
    "system        url\n" +
      "------------  ---------------------\n" +
      "rate-limiter  http://127.0.0.1:8101\n" +
      "chat\n",
  );
});
