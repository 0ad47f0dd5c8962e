import assert from "node:assert/strict";
import { contractSuite } from "../src/contract-suite.ts";

class Counter {
  value = 0;
  add(n: number): number {
    this.value += n;
    return this.value;
  }
}

let closed = 0;
contractSuite<Counter>(
  "contract suite runs every case per backend",
  [
    { name: "first", open: async () => ({ subject: new Counter(), close: async () => void closed++ }) },
    { name: "second", open: async () => ({ subject: new Counter(), close: async () => void closed++ }) },
    {
      name: "unavailable",
      open: async (t) => {
        t.skip("engine down in this test on purpose");
        return undefined;
      },
    },
  ],
  (it) => {
    it("state is per backend", (counter) => {
      assert.equal(counter.add(2), 2);
    });
    it("cases share the backend's subject in order", (counter) => {
      assert.equal(counter.add(3), 5);
    });
  },
);
