/**
 * What a command needs from the outside world, passed in rather than reached for,
 * so the commands do not depend on the process they run in.
 *
 * @example
 * const io: CliIo = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s),
 *   env: process.env, stdoutIsTty: process.stdout.isTTY === true, cliDir: import.meta.dirname };
 */
export interface CliIo {
  out(text: string): void;
  err(text: string): void;
  env: NodeJS.ProcessEnv;
  /** Pretty, coloured log lines only on a terminal. */
  stdoutIsTty: boolean;
  /** Where the CLI's files are: the repository root is found by walking up from here. */
  cliDir: string;
}
