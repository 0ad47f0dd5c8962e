/**
 * Finding the engines' programs, and installing them from Debian when they are
 * missing, so a fresh machine runs the lab tests without a manual step.
 *
 * @example
 * const redisServer = await ensureExecutable("redis-server", { debianPackage: "redis-server" });
 */
import { execFile } from "node:child_process";
import { accessSync, constants, readdirSync } from "node:fs";
import { delimiter, join } from "node:path";
import { labErrors } from "./lab-errors.ts";

/** Where Debian puts server programs that may not be on a test runner's PATH. */
const EXTRA_DIRS = ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"];
/** apt-get update plus one install: generous, but a hung mirror must not hang the tests forever. */
const INSTALL_TIMEOUT_MS = 600_000;
const APT_LOCK = "/tmp/casebook-apt.lock";

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The absolute path of `name` on PATH (or in the usual sbin/bin dirs), or undefined. */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter).filter(Boolean), ...EXTRA_DIRS];
  for (const dir of dirs) {
    const path = join(dir, name);
    if (isExecutable(path)) return path;
  }
  return undefined;
}

const installs = new Map<string, Promise<void>>();

/**
 * `apt-get update` then `apt-get install -y <pkg>`, once per package per process,
 * serialized across processes by `flock` (several test files may need it at once).
 */
export function installDebianPackage(pkg: string): Promise<void> {
  const pending = installs.get(pkg);
  if (pending) return pending;
  const script = `apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q ${pkg}`;
  const install = new Promise<void>((resolve, reject) => {
    execFile(
      "flock",
      [APT_LOCK, "sh", "-c", script],
      { timeout: INSTALL_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, _stdout, stderr) => {
        if (!error) return resolve();
        reject(
          labErrors.create("LAB_ENGINE_MISSING", {
            detail: `installing Debian package ${pkg} failed: ${stderr.slice(-2_000) || error.message}`,
            fields: { package: pkg },
            cause: error,
          }),
        );
      },
    );
  });
  installs.set(pkg, install);
  return install;
}

export interface EnsureOptions {
  /** The Debian package that provides the program. */
  debianPackage: string;
  /** Install it when missing (root only). Default true. */
  install?: boolean;
}

/** The program's path; installs its Debian package first when it is missing and we may. */
export async function ensureExecutable(name: string, options: EnsureOptions): Promise<string> {
  const found = findExecutable(name);
  if (found) return found;
  const isRoot = process.getuid?.() === 0;
  if (options.install === false || !isRoot) {
    throw labErrors.create("LAB_ENGINE_MISSING", {
      detail: `${name} is not installed; install it with: apt-get install -y ${options.debianPackage}`,
      fields: { program: name, package: options.debianPackage },
    });
  }
  await installDebianPackage(options.debianPackage);
  const installed = findExecutable(name);
  if (installed) return installed;
  throw labErrors.create("LAB_ENGINE_MISSING", {
    detail: `Debian package ${options.debianPackage} installed, but ${name} is still not found`,
    fields: { program: name, package: options.debianPackage },
  });
}

/**
 * The newest PostgreSQL server bin dir, /usr/lib/postgresql/<major>/bin (Debian's
 * layout: initdb and postgres are not on PATH there), or undefined.
 */
export function findPostgresBinDir(root = "/usr/lib/postgresql"): string | undefined {
  let versions: string[];
  try {
    versions = readdirSync(root);
  } catch {
    return undefined;
  }
  const majors = versions.filter((v) => /^\d+(\.\d+)?$/.test(v)).sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const bin = join(root, major, "bin");
    if (isExecutable(join(bin, "initdb")) && isExecutable(join(bin, "postgres"))) return bin;
  }
  return undefined;
}
