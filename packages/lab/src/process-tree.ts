/**
 * Signals a process and every descendant of it. A process group is not enough:
 * PostgreSQL's children call setsid(), so SIGSTOP to the postmaster's group leaves
 * the backends answering, and SIGKILL to it leaves them holding shared memory.
 * Linux only: the tree is read from /proc (elsewhere only the root is signalled).
 *
 * To signal a tree atomically, the root is stopped first: a stopped process cannot
 * fork, so no child appears between reading the tree and signalling it.
 *
 * @example
 * signalTree(postmasterPid, "SIGSTOP"); // the whole server freezes
 * signalTree(postmasterPid, "SIGCONT");
 */
import { readdirSync, readFileSync } from "node:fs";

/** Depth of descendants walked: an engine's tree is 2–3 deep; the bound stops a runaway walk. */
const MAX_TREE_DEPTH = 8;

/** pid → parent pid of every process visible in /proc. */
function parentMap(): Map<number, number> {
  const parents = new Map<number, number>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return parents;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "latin1");
    } catch {
      continue; // exited meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parens, so split after the LAST ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    parents.set(Number(entry), Number(fields[1]));
  }
  return parents;
}

/**
 * The same walk in POSIX sh, for the reaper's watchdog, which must work after this
 * process is dead: stop the root, find and stop descendants level by level, then
 * SIGKILL them all. `$1` = root pid. Bounded by MAX_TREE_DEPTH levels.
 */
export const KILL_TREE_SH = `
root=$1
kill -STOP "$root" "-$root" 2>/dev/null
all=$root; frontier=$root; depth=0
while [ -n "$frontier" ] && [ "$depth" -lt ${MAX_TREE_DEPTH} ]; do
  next=""
  for s in /proc/[0-9]*/stat; do
    { read -r line < "$s"; } 2>/dev/null || continue
    set -- \${line##*") "}
    for p in $frontier; do
      if [ "$2" = "$p" ]; then pid=\${s#/proc/}; next="$next \${pid%/stat}"; fi
    done
  done
  for p in $next; do kill -STOP "$p" 2>/dev/null; done
  all="$all $next"; frontier=$next; depth=$((depth + 1))
done
kill -9 "-$root" $all 2>/dev/null
`;

/** The descendants of `root` (not `root` itself), parents before children. */
export function descendants(root: number): number[] {
  const parents = parentMap();
  const found: number[] = [];
  let frontier = new Set([root]);
  for (let depth = 0; depth < MAX_TREE_DEPTH && frontier.size > 0; depth++) {
    const next = new Set<number>();
    for (const [pid, ppid] of parents) if (frontier.has(ppid)) next.add(pid);
    found.push(...next);
    frontier = next;
  }
  return found;
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
  }
}

/** The root and its group (it leads one when spawned `detached`; other group members come along). */
function signalRoot(root: number, signal: NodeJS.Signals): void {
  signalQuietly(root, signal);
  signalQuietly(-root, signal);
}

/**
 * Sends `signal` to `root`'s process group and to every descendant. Returns false
 * when the root is already gone.
 */
export function signalTree(root: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(root, 0);
  } catch {
    return false;
  }
  const freeze = signal === "SIGSTOP" || signal === "SIGKILL";
  // Stop the root first so it cannot fork while the tree is read; SIGCONT goes to children first.
  if (freeze) signalRoot(root, "SIGSTOP");
  const tree = descendants(root);
  if (signal === "SIGCONT") {
    for (const pid of tree.reverse()) signalQuietly(pid, signal);
    signalRoot(root, signal);
    return true;
  }
  for (const pid of tree) signalQuietly(pid, signal);
  signalRoot(root, signal);
  return true;
}
