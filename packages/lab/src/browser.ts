/**
 * A headless Chromium for tests: playwright-core driving Debian's `chromium` (installed on
 * demand, as root, like the engines), with the flags this machine needs and a fresh
 * `--user-data-dir` per launch (playwright's persistent context, in a temp dir removed on
 * close). A missing browser is LAB_BROWSER_MISSING: a failure under
 * CASEBOOK_REQUIRE_ENGINES=1, a skip with the reason otherwise (`requireBrowser(t)`).
 *
 * @example
 * const opened = await openPage("http://127.0.0.1:8080/");
 * await opened.page.textContent("h1");      // "hello"
 * const png = await opened.screenshot();     // PNG bytes
 * await opened.close();                      // the page, the browser and its profile dir
 */
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { ownTempDir } from "./child-reaper.ts";
import { ensureExecutable } from "./executables.ts";
import { labErrors } from "./lab-errors.ts";
import { enginesRequired, type SkippableContext } from "./test-engines.ts";

/** The flags every launch gets (the env entry's list; see shared/PEERS.md). */
export const CHROMIUM_FLAGS: readonly string[] = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface LaunchOptions {
  /** The browser binary. Default: $CASEBOOK_CHROMIUM, else `chromium` on PATH (installed when missing and root). */
  executablePath?: string;
  /** Flags added after CHROMIUM_FLAGS (`--autoplay-policy=no-user-gesture-required` for video). */
  args?: readonly string[];
  /** Install Debian's chromium when it is missing (root only). Default true. */
  install?: boolean;
  /** Bound on the launch. Default 30 000 ms. */
  launchTimeoutMs?: number;
  /** Default bound of page actions and navigations. Default 15 000 ms. */
  actionTimeoutMs?: number;
  viewport?: { width: number; height: number };
  env?: NodeJS.ProcessEnv;
}

export interface LabBrowser {
  /** Playwright's context: the browser with its fresh profile. */
  readonly context: BrowserContext;
  /** The profile dir (`--user-data-dir`), removed by `close()`. */
  readonly userDataDir: string;
  /** A new tab at `url`, loaded (the `load` event). */
  openPage(url: string): Promise<Page>;
  /** Closes the browser and removes its profile dir. Idempotent. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export interface OpenedPage {
  readonly page: Page;
  readonly browser: LabBrowser;
  /** A PNG of the viewport (or the full page). */
  screenshot(options?: { fullPage?: boolean; path?: string }): Promise<Buffer>;
  /** Closes the page and its browser. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

async function chromiumPath(options: LaunchOptions): Promise<string> {
  const explicit = options.executablePath ?? process.env.CASEBOOK_CHROMIUM;
  if (explicit) return explicit;
  try {
    return await ensureExecutable("chromium", {
      debianPackage: "chromium",
      install: options.install ?? true,
    });
  } catch (error) {
    throw labErrors.create("LAB_BROWSER_MISSING", {
      detail: `no Chromium to drive: ${(error as Error).message}`,
      fields: { package: "chromium" },
      cause: error,
    });
  }
}

/**
 * Launches Chromium with a fresh profile (see the module's example).
 *
 * @example
 * await using browser = await launchBrowser();
 * const page = await browser.openPage(url);
 */
export async function launchBrowser(options: LaunchOptions = {}): Promise<LabBrowser> {
  const executablePath = await chromiumPath(options);
  const { dir: userDataDir, remove: removeDir } = await ownTempDir("casebook-chromium-");
  let context: BrowserContext;
  try {
    // launchPersistentContext: playwright refuses --user-data-dir in args and owns the flag.
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath,
      headless: true,
      args: [...CHROMIUM_FLAGS, ...(options.args ?? [])],
      timeout: options.launchTimeoutMs ?? 30_000,
      viewport: options.viewport ?? { width: 1280, height: 720 },
      ...(options.env ? { env: options.env } : {}),
    });
  } catch (error) {
    await removeDir();
    throw labErrors.create("LAB_BROWSER_MISSING", {
      detail: `Chromium (${executablePath}) did not start: ${(error as Error).message.slice(0, 2_000)}`,
      fields: { executablePath },
      cause: error,
    });
  }
  context.setDefaultTimeout(options.actionTimeoutMs ?? 15_000);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    try {
      await context.close();
    } finally {
      await removeDir();
    }
  };
  return {
    context,
    userDataDir,
    openPage: async (url) => {
      const page = await context.newPage();
      await page.goto(url, { waitUntil: "load" });
      return page;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * A browser of its own with one page loaded at `url`; `close()` ends both.
 *
 * @example
 * const { page, screenshot, close } = await openPage(url);
 */
export async function openPage(url: string, options: LaunchOptions = {}): Promise<OpenedPage> {
  const browser = await launchBrowser(options);
  let page: Page;
  try {
    page = await browser.openPage(url);
  } catch (error) {
    await browser.close();
    throw error;
  }
  return {
    page,
    browser,
    screenshot: (shot = {}) => screenshot(page, shot),
    close: () => browser.close(),
    [Symbol.asyncDispose]: () => browser.close(),
  };
}

/**
 * A PNG of the page (the viewport, or the whole page with `fullPage`), also written to `path` when given.
 *
 * @example
 * const png = await screenshot(page, { fullPage: true, path: "/tmp/page.png" });
 */
export function screenshot(page: Page, options: { fullPage?: boolean; path?: string } = {}): Promise<Buffer> {
  return page.screenshot({
    type: "png",
    fullPage: options.fullPage ?? false,
    ...(options.path ? { path: options.path } : {}),
  });
}

/**
 * Launches the browser for a test; without one, skips `t` with the reason (and resolves
 * undefined) — or fails under CASEBOOK_REQUIRE_ENGINES=1. The browser closes with the test.
 *
 * @example
 * const browser = await requireBrowser(t);
 * if (!browser) return;
 */
export async function requireBrowser(
  t: SkippableContext & { after(fn: () => unknown): void },
  options: LaunchOptions = {},
): Promise<LabBrowser | undefined> {
  try {
    const browser = await launchBrowser(options);
    t.after(() => browser.close());
    return browser;
  } catch (error) {
    if (!labErrors.is(error, "LAB_BROWSER_MISSING") || enginesRequired) throw error;
    t.skip(error.message);
    return undefined;
  }
}
