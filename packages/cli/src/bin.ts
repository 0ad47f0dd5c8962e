#!/usr/bin/env node
/**
 * The `casebook` executable (`npm start` runs `casebook up`). Needs Node 24: the
 * `node` devDependency puts it first on PATH in npm scripts and `npx`.
 *
 * @example
 * // node packages/cli/src/bin.ts list
 */
import { main } from "./main.ts";

// A reader that went away (`casebook list | head -1`) is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code !== "EPIPE") throw error;
  });
}

process.exitCode = await main(process.argv.slice(2), {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  env: process.env,
  stdoutIsTty: process.stdout.isTTY === true,
  cliDir: import.meta.dirname,
});
