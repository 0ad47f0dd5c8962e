/**
 * One conformance suite per interface, run against every backend (the way hono
 * runs one router suite against each router). A backend that cannot run here
 * (engine down) is skipped with its reason — or fails when CASEBOOK_REQUIRE_ENGINES=1.
 *
 * @example
 * contractSuite("counter store", [
 *   { name: "in-process", open: async () => ({ subject: new MemoryCounter(), close: async () => {} }) },
 *   { name: "redis", open: async (t) => { const url = await requireRedis(t); ... } },
 * ], (it) => {
 *   it("increments atomically", async (store) => { ... });
 * });
 */
import { after, before, describe, test } from "node:test";

export interface Opened<Subject> {
  subject: Subject;
  close(): Promise<void>;
}

export interface Backend<Subject> {
  name: string;
  /** Opens the backend; returns undefined after calling `t.skip(reason)` when it can't run here. */
  open(t: { skip(message?: string): void }): Promise<Opened<Subject> | undefined>;
}

export type ContractCase<Subject> = (name: string, body: (subject: Subject) => Promise<void> | void) => void;

/** Registers `cases` once per backend, each backend in its own describe block. */
export function contractSuite<Subject>(
  title: string,
  backends: Backend<Subject>[],
  cases: (it: ContractCase<Subject>) => void,
): void {
  for (const backend of backends) {
    describe(`${title} [${backend.name}]`, () => {
      let opened: Opened<Subject> | undefined;
      let skipReason: string | undefined;
      before(async () => {
        opened = await backend.open({
          skip: (message) => {
            skipReason = message ?? "backend unavailable";
          },
        });
      });
      after(async () => {
        await opened?.close();
      });
      cases((name, body) => {
        test(name, async (t) => {
          if (!opened) {
            t.skip(skipReason ?? "backend unavailable");
            return;
          }
          await body(opened.subject);
        });
      });
    });
  }
}
