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
import { CLOSED_PASS_SKIP, closedEnginePass, runEngineFree } from "./test-engines.ts";

export interface Opened<Subject> {
  subject: Subject;
  close(): Promise<void>;
}

export interface Backend<Subject> {
  name: string;
  /**
   * True when the backend reads no engine URL (PGlite, an in-process twin): its block skips
   * in CI's closed-engine pass (the main pass runs it), and elsewhere an engine probe in its
   * open or its cases throws, so the mark is proven wherever the block runs.
   */
  embedded?: boolean;
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
    const embedded = backend.embedded === true;
    const guard = <T>(fn: () => T): T =>
      embedded ? runEngineFree(`the "${backend.name}" backend of ${title}`, fn) : fn();
    describe(`${title} [${backend.name}]`, {
      skip: embedded && closedEnginePass ? CLOSED_PASS_SKIP : false,
    }, () => {
      let opened: Opened<Subject> | undefined;
      let skipReason: string | undefined;
      before(async () => {
        opened = await guard(() =>
          backend.open({
            skip: (message) => {
              skipReason = message ?? "backend unavailable";
            },
          }),
        );
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
          const subject = opened.subject;
          await guard(() => body(subject));
        });
      });
    });
  }
}
