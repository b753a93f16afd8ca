/**
 * The headless Chromium that the browser tests drive: the build that the npm package `@sparticuz/chromium` carries
 * inside its tarball, so that `npm ci && npm test` needs no browser installed on the machine (and never downloads
 * one). The build is unpacked once per package version into the temp folder.
 */
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, chmodSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import { createBrotliDecompress } from "node:zlib";
import { chromium, type Browser, type BrowserContext } from "playwright-core";

const require = createRequire(import.meta.url);

/** Flags for this machine: no sandbox as root, no GPU, and none of Chromium's own connections (the network is closed). */
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/** The package's folder: the one above its entry that holds `bin/chromium.br` (the package exports no package.json). */
function packageDir(): string {
  let dir = dirname(require.resolve("@sparticuz/chromium"));
  while (!existsSync(join(dir, "bin", "chromium.br"))) {
    const up = dirname(dir);
    if (up === dir) throw new Error("@sparticuz/chromium has no bin/chromium.br: run npm ci");
    dir = up;
  }
  return dir;
}

let unpacked: Promise<string> | undefined;

/**
 * The browser's executable, unpacked on first use. Each process writes its own temporary file and renames it into
 * place, so two test files starting at once never run a half-written binary.
 */
export function chromiumPath(): Promise<string> {
  unpacked ??= (async () => {
    const pkg = packageDir();
    const version = (JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { version: string }).version;
    const dir = join(tmpdir(), `iavlite-chromium-${version}`);
    const exe = join(dir, "chromium");
    if (existsSync(exe)) return exe;
    mkdirSync(dir, { recursive: true });
    const part = `${exe}.${process.pid}.part`;
    await pipeline(createReadStream(join(pkg, "bin", "chromium.br")), createBrotliDecompress(), createWriteStream(part));
    chmodSync(part, 0o755);
    renameSync(part, exe);
    return exe;
  })();
  return unpacked;
}

/** A headless browser with a fresh, temporary profile. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: await chromiumPath(), headless: true, args: ARGS });
}

/** A headless browser context that keeps its profile in `profileDir` (clipboard permissions need one). */
export async function launchContext(profileDir: string, viewport: { width: number; height: number }): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profileDir, { executablePath: await chromiumPath(), headless: true, args: ARGS, viewport });
}
