/**
 * Whether a loopback TCP port is listened on by THIS process tree: the readiness check of
 * engines whose protocol answers with nothing of their own (an HTTP server's page). On a lost
 * race for a free port the probe's request reaches the winner; the listening socket's inode,
 * found among the tree's open files, tells ours from theirs. Linux-only (/proc).
 *
 * @example
 * if (listensOn(port, engine.pid) && (await httpProbe(port, "/-/ready"))?.status === 200) ready();
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { descendants } from "./process-tree.ts";

const LISTEN = "0A";

/** The inodes of sockets listening on `port` (IPv4 and IPv6 tables). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "latin1");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      if (fields.length < 10) continue;
      if (fields[1]!.endsWith(`:${hexPort}`) && fields[3] === LISTEN) inodes.add(fields[9]!);
    }
  }
  return inodes;
}

/** True when `root` or one of its descendants holds a socket listening on `port`. */
export function listensOn(port: number, root: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  for (const pid of [root, ...descendants(root)]) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
        if (inode !== undefined && inodes.has(inode)) return true;
      } catch {
        // The fd closed meanwhile.
      }
    }
  }
  return false;
}
