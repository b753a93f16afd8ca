/**
 * The explorer page of `iavlite serve` in a real headless Chromium (Debian's, driven by playwright-core), against a
 * real `iavlite serve` process on a live multi-store: the stores and app hash shown, keys looked up (text and hex, at
 * the latest and an older height) with their proofs verified in the browser by iavlite/verify, a proof or value
 * tampered in flight marked not verified, an absent key's non-membership verified, a range paged with `next`, and the
 * changes of a version with its removals; no script error and no Content-Security-Policy violation on the way. Then
 * the same page from a built copy of the package, where the verifier's compiled modules are sent as they are.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, cpSync, existsSync, readdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { writeDemoChain } from "./fixtures/explorer-demo.js";

const CHROMIUM = "/usr/bin/chromium";
// This machine's network is closed: Chromium's own background connections would only be refused.
const CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const repo = fileURLToPath(new URL("..", import.meta.url));

/** Every child started (the first serves every test of its describe), ended after the file even when a test failed. */
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Starts `node args…` (an `iavlite serve`) and resolves with the URL it prints. */
function serve(args: string[]): Promise<string> {
  const p = spawn(process.execPath, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  children.push(p);
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`iavlite serve printed no address: ${err}`)), 30_000);
    p.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    p.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m !== null) clearTimeout(timer), resolve(m[1]!);
    });
    p.on("exit", (code) => (clearTimeout(timer), reject(new Error(`iavlite serve exited ${code}: ${err}`))));
  });
}

let browser: Promise<BrowserContext> | undefined;

/**
 * The browser, started on first use with a fresh profile. Each test that needs it fails (never skips) when Chromium is
 * missing.
 */
function launched(): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the explorer's browser test needs Chromium at ${CHROMIUM}, which is missing: apt-get install -y chromium (.ci/run installs it)`);
  }
  browser ??= chromium.launchPersistentContext(tempDir("iavlite-chromium-"), {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1200, height: 900 },
  });
  return browser;
}

afterAll(async () => (await browser)?.close());

/** A page whose script errors, failed loads and CSP violations are collected. */
async function open(url: string): Promise<{ page: Page; problems: string[] }> {
  const page = await (await launched()).newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  await page.goto(`${url}/`);
  await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
  return { page, problems };
}

/** Looks `key` up in the page's form; resolves with the verdict's mark and text, and the value shown. */
async function lookup(page: Page, key: string, o: { text?: boolean; height?: string } = {}): Promise<{ verified: string | null; verdict: string; value: string }> {
  await page.fill("#lookup-key", key);
  await page.setChecked("#lookup-text", o.text === true);
  await page.fill("#lookup-height", o.height ?? "");
  await page.click("#lookup button[type=submit]");
  await page.waitForSelector("#lookup-result:not([hidden])");
  return {
    verified: await page.getAttribute("#verdict", "data-verified"),
    verdict: (await page.textContent("#verdict")) ?? "",
    value: (await page.textContent("#lookup-value")) ?? "",
  };
}

/** The text of each row's cells of a table body. */
async function rows(page: Page, body: string): Promise<string[][]> {
  const trs = page.locator(`${body} tr`);
  const out: string[][] = [];
  for (let i = 0, n = await trs.count(); i < n; i++) out.push(await trs.nth(i).locator("td").allTextContents());
  return out;
}

const balance = (amount: number): string => JSON.stringify({ denom: "uatom", amount: String(amount) });

describe("the explorer page in Chromium", () => {
  let url: string;
  let appHashes: string[];

  beforeAll(async () => {
    const chain = join(tempDir("iavlite-explorer-"), "chain");
    appHashes = writeDemoChain(chain, 6);
    url = await serve(["--import", "tsx", join(repo, "src/cli/main.ts"), "serve", chain, "--port", "0"]);
  });

  it("is sent with a Content-Security-Policy that allows no inline script but its import map", async () => {
    const r = await fetch(`${url}/`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = r.headers.get("content-security-policy") ?? "";
    expect(csp).toMatch(/^default-src 'none'; script-src 'self' 'sha256-[A-Za-z0-9+/]{43}='; style-src 'self'; connect-src 'self'/);
    expect(csp).not.toContain("unsafe");
    const html = await r.text();
    expect(html).toContain('<script type="module" src="explorer/explorer.js"></script>');
    // The verifier and its hash function come from this server; nothing else is served from those folders.
    for (const [path, want] of [["explorer/verify/index.js", "verifyStoreInApp"], ["explorer/noble/sha2.js", "sha256"], ["explorer/explorer.css", ".verdict"]] as const) {
      const f = await fetch(`${url}/${path}`);
      expect([path, f.status, await f.text()]).toEqual([path, 200, expect.stringContaining(want)]);
    }
    for (const path of ["explorer/verify/index.ts", "explorer/verify/..%2F..%2F..%2Fpackage.json", "explorer/tsconfig.json", "explorer/noble/package.json"]) {
      const f = await fetch(`${url}/${path}`);
      expect([path, f.status, ((await f.json()) as { error: { code: string } }).error.code]).toEqual([path, 404, "NOT_FOUND"]);
    }
  });

  it("shows the stores, verifies looked-up keys in the browser, and marks a proof or value tampered in flight", async () => {
    const { page, problems } = await open(url);
    expect(await page.textContent("#latest")).toBe("6");
    expect(await page.textContent("#earliest")).toBe("1");
    expect(await page.textContent("#app-hash")).toBe(appHashes[6]);
    expect((await rows(page, "#stores tbody")).map((r) => r.slice(0, 3))).toEqual([["bank", "1", "6"], ["staking", "1", "6"]]);
    await page.selectOption("#store", "bank");

    // A key typed as text, at the latest height and at an older one; then typed as hex.
    const latest = await lookup(page, "balance/alice", { text: true });
    expect(latest).toEqual({ verified: "true", verdict: "✓ verified present at height 6", value: expect.stringContaining(balance(1000 + 37 * 6)) });
    const old = await lookup(page, "balance/alice", { text: true, height: "2" });
    expect(old).toEqual({ verified: "true", verdict: "✓ verified present at height 2", value: expect.stringContaining(balance(1000 + 37 * 2)) });
    expect((await lookup(page, toHex(b("balance/bob")))).verified).toBe("true");
    // Both levels were checked: the key under the store hash, the store under the app hash.
    expect((await page.locator("#verdict-steps li").allTextContents()).map((t) => t.slice(0, 2))).toEqual(["✓ ", "✓ "]);

    // An absent key (removed at version 4): its non-membership proof verifies; at version 3 it was there.
    const absent = await lookup(page, "balance/carol", { text: true });
    expect(absent).toEqual({ verified: "true", verdict: "✓ verified absent at height 6", value: "absent" });
    expect((await lookup(page, "balance/carol", { text: true, height: "3" })).verdict).toBe("✓ verified present at height 3");

    // A byte of proof.store changed on its way to the page: not verified.
    const flip = (hex: string): string => hex.slice(0, -2) + (parseInt(hex.slice(-2), 16) ^ 1).toString(16).padStart(2, "0");
    await page.route("**/v1/query?**", async (route) => {
      const res = await route.fetch();
      const q = (await res.json()) as { proof: { store: string } };
      await route.fulfill({ response: res, json: { ...q, proof: { ...q.proof, store: flip(q.proof.store) } } });
    });
    const tampered = await lookup(page, "balance/alice", { text: true });
    expect(tampered).toEqual({ verified: "false", verdict: "✗ not verified (height 6)", value: expect.stringContaining(balance(1222)) });
    expect(await page.isVisible("text=✗ not verified")).toBe(true);
    const absentTampered = await lookup(page, "balance/carol", { text: true });
    expect(absentTampered.verified).toBe("false");
    await page.unroute("**/v1/query?**");

    // A value changed on its way (a lying server, the proof left whole): not verified either.
    await page.route("**/v1/query?**", async (route) => {
      const res = await route.fetch();
      const q = (await res.json()) as { value: string };
      await route.fulfill({ response: res, json: { ...q, value: toHex(b(balance(9_999_999))) } });
    });
    expect((await lookup(page, "balance/alice", { text: true })).verified).toBe("false");
    await page.unroute("**/v1/query?**");
    expect((await lookup(page, "balance/alice", { text: true })).verified).toBe("true");

    expect(problems).toEqual([]);

    // An error of the service is shown as such (the browser logs the failed request, and nothing else).
    await page.fill("#lookup-height", "7");
    await page.click("#lookup button[type=submit]");
    await page.waitForSelector("#lookup-error:not([hidden])");
    expect(await page.textContent("#lookup-error")).toMatch(/^VERSION_NOT_FOUND: /);
    expect(await page.isHidden("#lookup-result")).toBe(true);
    expect(problems).toEqual([expect.stringMatching(/^console error: Failed to load resource: .* 404/)]);
    await page.close();
  });

  it("pages through a range with next, at the height of its first page", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    await page.fill("#range-limit", "3");
    await page.click("#range button[type=submit]");
    await page.waitForSelector("#range-table:not([hidden])");
    const all = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"];
    const names = (ns: string[]): string[][] => ns.map((n) => [`balance/${n}`, balance(1000 * (all.indexOf(n) + 1) + 37 * 6)]);
    expect(await rows(page, "#range-rows")).toEqual(names(["alice", "bob", "dave"]));
    await page.click("#range-next");
    await page.waitForSelector("#range-table:not([hidden])");
    expect(await rows(page, "#range-rows")).toEqual(names(["erin", "frank", "grace"]));
    await page.click("#range-next");
    await page.waitForSelector("#range-table:not([hidden])");
    expect(await rows(page, "#range-rows")).toEqual(names(["heidi"]));
    expect(await page.textContent("#range-info")).toBe("1 key of bank at height 6, the last page");
    expect(await page.isHidden("#range-next")).toBe(true);
    // From a key typed as text, at an older height.
    await page.fill("#range-start", "balance/c");
    await page.setChecked("#range-text", true);
    await page.fill("#range-height", "3");
    await page.click("#range button[type=submit]");
    await page.waitForSelector("#range-table:not([hidden])");
    expect((await rows(page, "#range-rows")).map((r) => r[0])).toEqual(["balance/carol", "balance/dave", "balance/erin"]);
    expect(await page.textContent("#range-info")).toBe("3 keys of bank at height 3");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows the changes of a version, removals marked", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    await page.fill("#changes-version", "4");
    await page.click("#changes button[type=submit]");
    await page.waitForSelector("#changes-table:not([hidden])");
    const got = await rows(page, "#changes-rows");
    expect(got).toContainEqual(["balance/carol", "removed"]);
    expect(got).toContainEqual(["balance/alice", balance(1000 + 37 * 4)]);
    expect(await page.textContent("#changes-info")).toBe(`version 4 of bank: ${got.length} changes, 1 removed`);
    // The latest by default, in the other store.
    await page.selectOption("#store", "staking");
    await page.fill("#changes-version", "");
    await page.click("#changes button[type=submit]");
    await page.waitForSelector("#changes-table:not([hidden])");
    // Set again with the same value is a change too: the store logs every set.
    expect((await rows(page, "#changes-rows")).map((r) => r[0])).toEqual([
      "params/unbonding_time",
      "validator/cosmosvaloper1m9w",
      "validator/cosmosvaloper1qx8",
      "validator/cosmosvaloper1z3k",
    ]);
    expect(await page.textContent("#changes-info")).toBe("version 6 of staking: 4 changes, 0 removed");
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe("the explorer page from a built copy of the package", () => {
  it("sends the compiled verifier modules as they are, and they verify in Chromium", async () => {
    // The package's layout, as `npm run build` makes it (each source file compiled alone, to dist/src).
    const root = tempDir("iavlite-built-");
    const sources = (readdirSync(join(repo, "src"), { recursive: true }) as string[]).filter((f) => f.endsWith(".ts"));
    const built = buildSync({
      entryPoints: sources.map((f) => join(repo, "src", f)),
      outbase: join(repo, "src"),
      outdir: join(root, "dist", "src"),
      format: "esm",
      platform: "node",
      target: "node20",
      logLevel: "silent",
    });
    expect(built.errors).toEqual([]);
    for (const d of ["explorer", "migrations"]) cpSync(join(repo, d), join(root, d), { recursive: true });
    copyFileSync(join(repo, "package.json"), join(root, "package.json"));
    symlinkSync(join(repo, "node_modules"), join(root, "node_modules"));

    const chain = join(tempDir("iavlite-explorer-"), "chain");
    const appHashes = writeDemoChain(chain, 3);
    const url = await serve([join(root, "dist/src/cli/main.js"), "serve", chain, "--port", "0"]);
    const ops = await (await fetch(`${url}/explorer/verify/ops.js`)).text();
    expect(ops).toContain('from "@noble/hashes/sha2.js"');
    const { page, problems } = await open(url);
    expect(await page.textContent("#app-hash")).toBe(appHashes[3]);
    await page.selectOption("#store", "staking");
    expect(await lookup(page, "params/unbonding_time", { text: true })).toEqual({
      verified: "true",
      verdict: "✓ verified present at height 3",
      value: expect.stringContaining("1814400s"),
    });
    expect((await lookup(page, "params/nothing", { text: true })).verdict).toBe("✓ verified absent at height 3");
    expect(problems).toEqual([]);
    await page.close();
  });
});
