/**
 * Hot reload: re-reads the policy file when it changes (fs.watch, plus a poll as a
 * backstop: editors replace files, and some filesystems drop watch events). A file
 * that fails validation is refused with every problem logged; the policies in force
 * stay as they were.
 */
import { watch } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { BackgroundLoop, unrefSleep } from "@casebook/kit/background-loop";
import { parse as parseYaml } from "yaml";
import { type PolicyConfig, parsePolicyConfig } from "../domain/policy.ts";

/** Reads and validates a YAML or JSON policy file; throws RATELIMIT_POLICY_INVALID listing every issue. */
export async function loadPolicyFile(path: string): Promise<PolicyConfig> {
  const text = await readFile(path, "utf8");
  return parsePolicyConfig(path.endsWith(".json") ? JSON.parse(text) : parseYaml(text));
}

export interface PolicyWatcherOptions {
  readonly path: string;
  readonly onReload: (config: PolicyConfig) => void;
  readonly onError: (error: unknown) => void;
  /** Backstop poll period. Default 2 000. */
  readonly pollMs?: number;
}

/**
 * Starts watching, on kit's BackgroundLoop: a round stats the file and reloads it when its
 * mtime moved; fs.watch events wake the loop, the idle pause is the backstop poll. Returns
 * a stop function that resolves once the round in progress has finished.
 */
export function watchPolicyFile(options: PolicyWatcherOptions): () => Promise<void> {
  const pollMs = options.pollMs ?? 2_000;
  /** The mtime of the file in force; the first round only learns it (main loaded that file). */
  let lastMtimeMs: number | undefined;
  const loop = new BackgroundLoop({
    name: "policy watcher",
    round: async () => {
      const { mtimeMs } = await stat(options.path);
      if (lastMtimeMs === undefined || mtimeMs === lastMtimeMs) {
        lastMtimeMs = mtimeMs;
        return false;
      }
      lastMtimeMs = mtimeMs;
      options.onReload(await loadPolicyFile(options.path));
      return false;
    },
    idleMs: pollMs,
    failureBackoff: { capMs: pollMs, jitter: "none" }, // a bad file is retried at the poll rate
    onError: (error) => options.onError(error),
    sleep: unrefSleep,
  });
  const watcher = watch(options.path, { persistent: false }, () => loop.wake());
  watcher.on("error", options.onError);
  loop.start();
  return async () => {
    watcher.close();
    await loop.stop();
  };
}
