/**
 * A `node --test` reporter for the mutation check: one JSON line per failed test
 * (`{"file","name"}`), suites left out so the report names the tests that caught the
 * mutation. Loaded by path (`--test-reporter=<this file>`); a file that fails to load is
 * reported by node as a failed test named after the file, so it shows up too.
 *
 * @example
 * // node --test --test-reporter=packages/lab/src/mutation-reporter.ts a.test.ts
 * // {"file":"/…/a.test.ts","name":"RL-05 a stored state ahead of TIME mints nothing"}
 */

interface TestFailEvent {
  readonly type: string;
  readonly data?: {
    readonly name?: string;
    readonly file?: string;
    readonly details?: { readonly type?: string };
  };
}

export default async function* mutationReporter(
  source: AsyncIterable<TestFailEvent>,
): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== "test:fail" || event.data?.details?.type === "suite") continue;
    yield `${JSON.stringify({ file: event.data?.file ?? "", name: event.data?.name ?? "" })}\n`;
  }
}
