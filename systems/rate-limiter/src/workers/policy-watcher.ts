/**
 * Hot reload: re-reads the policy file when it changes (fs.watch, plus a poll as a
 * backstop: editors replace files, and some filesystems drop watch events). A file
 * that fails validation is refused with every problem logged; the policies in force
 * stay as they were.
 */
import { watch } from "node:fs";
import { readFile, stat } from "node:fs/promises";
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

/** Starts watching; returns a stop function. */
export function watchPolicyFile(options: PolicyWatcherOptions): () => void {
  let lastMtimeMs = 0;
  let running = false;
  const reload = async () => {
    if (running) return;
    running = true;
    try {
      const { mtimeMs } = await stat(options.path);
      if (mtimeMs === lastMtimeMs) return;
      lastMtimeMs = mtimeMs;
      options.onReload(await loadPolicyFile(options.path));
    } catch (error) {
      options.onError(error);
    } finally {
      running = false;
    }
  };
  void stat(options.path).then(
    (s) => {
      lastMtimeMs = s.mtimeMs;
    },
    () => {},
  );
  const watcher = watch(options.path, { persistent: false }, () => void reload());
  watcher.on("error", options.onError);
  const poll = setInterval(() => void reload(), options.pollMs ?? 2_000);
  poll.unref();
  return () => {
    watcher.close();
    clearInterval(poll);
  };
}
