/**
 * The explorer page of `iavlite serve` in a real headless Chromium (the build an npm package ships, driven by playwright-core), against a
 * real `iavlite serve` process on a live multi-store: the stores and app hash shown, keys looked up (typed as text or
 * as hex, the page saying which reading it used, at the latest and an older height) with their proofs verified in the
 * browser by iavlite/verify and their proof bytes shown and copied, a proof or value tampered in flight marked not
 * verified, an absent key's non-membership verified, a key's history paged with a proof checked on a row, a range
 * paged with Next and Previous, the changes of a version paged beside the values before them, the view kept in the
 * URL (a reload, Back and Forward, a link opened anew), the kept versions beside the height fields and the picked store
 * highlighted, and the latest version followed while a writer commits; no script error and no Content-Security-Policy
 * violation on the way. Then the same page from a built copy of the package, where the verifier's compiled modules are
 * sent as they are.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, inject } from "vitest";
import { toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { launchContext } from "./browser.js";
import { b } from "./helpers.js";
import { writeDemoChain } from "./fixtures/explorer-demo.js";

const repo = fileURLToPath(new URL("..", import.meta.url));

/** Every child started (the first serves every test of its describe), ended after the file even when a test failed. */
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/**
 * Starts `node args…` (an `iavlite serve`) and resolves with the URL it prints, however long it takes to start on a
 * busy machine (the test's timeout is the limit); rejects if it exits first.
 */
function serve(args: string[]): Promise<string> {
  const p = spawn(process.execPath, args, { cwd: repo, stdio: ["ignore", "pipe", "pipe"] });
  children.push(p);
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    p.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    p.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    p.on("exit", (code) => reject(new Error(`iavlite serve exited ${code}: ${err}`)));
  });
}

let browser: Promise<BrowserContext> | undefined;

/** The browser, started on first use with a fresh profile. */
function launched(): Promise<BrowserContext> {
  browser ??= launchContext(tempDir("iavlite-chromium-"), { width: 1200, height: 900 });
  return browser;
}

afterAll(async () => (await browser)?.close());

/** A page (at `hash`, the view a link names) whose script errors, failed loads and CSP violations are collected. */
async function open(url: string, hash = ""): Promise<{ page: Page; problems: string[] }> {
  const page = await (await launched()).newPage();
  const problems: string[] = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`console ${m.type()}: ${m.text()}`);
  });
  await page.goto(`${url}/${hash}`);
  // No deadline of its own: a busy machine starts Chromium slowly, and the test's timeout is the limit.
  await page.waitForSelector("body[data-ready=true]", { timeout: 0 });
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
const NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"];
/** The balance the demo chain sets for `name` at version `v`. */
const balanceOf = (name: string, v: number): string => balance(1000 * (NAMES.indexOf(name) + 1) + 37 * v);

/** Submits form `form` and waits for its table (or result) `shown` to be shown. */
async function submit(page: Page, form: string, shown: string): Promise<void> {
  await page.click(`${form} button[type=submit]`);
  await page.waitForSelector(`${shown}:not([hidden])`);
}

/** Clicks `button`, waits for the URL to name the new page (its view hides the table then), and for table `shown`. */
async function turn(page: Page, button: string, shown: string): Promise<void> {
  const before = new URL(page.url()).hash;
  await page.click(button);
  await page.waitForURL((u) => u.hash !== before);
  await page.waitForSelector(`${shown}:not([hidden])`);
}

/** The parameters of the view in the page's URL. */
const viewOf = (page: Page): Record<string, string> => Object.fromEntries(new URLSearchParams(new URL(page.url()).hash.slice(1)));

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
    // Every module of the page is sent as JavaScript, and shipped in the package.
    const files = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { files: string[] }).files;
    const pageModules = readdirSync(join(repo, "explorer")).filter((f) => f.endsWith(".js"));
    expect(pageModules.length).toBeGreaterThan(1);
    for (const f of pageModules) {
      const m = await fetch(`${url}/explorer/${f}`);
      expect([f, m.status, m.headers.get("content-type"), files.includes(`explorer/${f}`)]).toEqual([f, 200, "text/javascript; charset=utf-8", true]);
      expect(await m.text()).toMatch(/^\/\/ @ts-check\n/);
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
    // The picked store's row is highlighted, and its kept versions are shown beside every height field; a row picks.
    expect(await page.getAttribute("#stores tr.picked", "data-store")).toBe("bank");
    for (const id of ["#lookup-kept", "#history-kept", "#range-kept", "#changes-kept"]) expect([id, await page.textContent(id)]).toEqual([id, "kept: 1–6"]);
    await page.click("#stores tbody tr[data-store=staking]");
    expect(await page.inputValue("#store")).toBe("staking");
    expect(await page.getAttribute("#stores tr[aria-current=true]", "data-store")).toBe("staking");
    expect(await page.locator("#stores tr.picked").count()).toBe(1);
    await page.selectOption("#store", "bank");
    expect(await page.getAttribute("#stores tr.picked", "data-store")).toBe("bank");

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

  it("pages through a range with Next and Previous, at the height of its first page", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    await page.fill("#range-limit", "3");
    await page.click("#range button[type=submit]");
    await page.waitForSelector("#range-table:not([hidden])");
    const names = (ns: string[]): string[][] => ns.map((n) => [`balance/${n}`, balanceOf(n, 6)]);
    expect(await rows(page, "#range-rows")).toEqual(names(["alice", "bob", "dave"]));
    await page.click("#range-next");
    await page.waitForSelector("#range-table:not([hidden])");
    expect(await rows(page, "#range-rows")).toEqual(names(["erin", "frank", "grace"]));
    await page.click("#range-next");
    await page.waitForSelector("#range-table:not([hidden])");
    expect(await rows(page, "#range-rows")).toEqual(names(["heidi"]));
    expect(await page.textContent("#range-info")).toBe("1 key of bank at height 6, the last page");
    expect(await page.isHidden("#range-next")).toBe(true);
    // Previous, back to the first page (a stack of the pages' starts).
    await turn(page, "#range-prev", "#range-table");
    expect(await rows(page, "#range-rows")).toEqual(names(["erin", "frank", "grace"]));
    const second = page.url();
    expect(viewOf(page)).toEqual({ view: "keys", store: "bank", height: "6", limit: "3", at: toHex(b("balance/erin")) });
    await turn(page, "#range-prev", "#range-table");
    expect(await rows(page, "#range-rows")).toEqual(names(["alice", "bob", "dave"]));
    expect(await page.isHidden("#range-prev")).toBe(true);
    // The second page's link opened anew, with no stack: Previous finds the page before by reading backwards.
    const again = await open(url, new URL(second).hash);
    await again.page.waitForSelector("#range-table:not([hidden])");
    expect(await rows(again.page, "#range-rows")).toEqual(names(["erin", "frank", "grace"]));
    expect(await again.page.inputValue("#range-limit")).toBe("3");
    await turn(again.page, "#range-prev", "#range-table");
    expect(await rows(again.page, "#range-rows")).toEqual(names(["alice", "bob", "dave"]));
    expect(await again.page.isHidden("#range-prev")).toBe(true);
    expect(again.problems).toEqual([]);
    await again.page.close();
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

  it("pages the changes of a version, each beside the key's value at the version before", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    const queries: string[] = [];
    page.on("request", (r) => void (r.url().includes("/v1/query?") && queries.push(new URL(r.url()).searchParams.get("height") ?? "")));
    await page.fill("#changes-version", "4");
    await page.fill("#changes-limit", "3");
    await submit(page, "#changes", "#changes-table");
    const at = (n: string, removed = false): string[] => [`balance/${n}`, balanceOf(n, 3), removed ? "removed" : balanceOf(n, 4)];
    expect(await rows(page, "#changes-rows")).toEqual([at("alice"), at("bob"), at("carol", true)]);
    expect(await page.textContent("#changes-info")).toBe("version 4 of bank: changes 1–3, more on the next page, 1 removed");
    expect(await page.isHidden("#changes-prev")).toBe(true);
    // One question per row shown, at the version before.
    expect(queries).toEqual(["3", "3", "3"]);
    await turn(page, "#changes-next", "#changes-table");
    expect(await rows(page, "#changes-rows")).toEqual([at("dave"), at("erin"), at("frank")]);
    expect(await page.textContent("#changes-info")).toBe("version 4 of bank: changes 4–6, more on the next page, 0 removed");
    await turn(page, "#changes-next", "#changes-table");
    expect(await rows(page, "#changes-rows")).toEqual([at("grace"), at("heidi")]);
    expect(await page.textContent("#changes-info")).toBe("version 4 of bank: changes 7–8 of 8, 0 removed");
    expect(await page.isHidden("#changes-next")).toBe(true);
    expect(viewOf(page)).toEqual({ view: "changes", store: "bank", version: "4", limit: "3", page: "3" });
    await turn(page, "#changes-prev", "#changes-table");
    expect((await rows(page, "#changes-rows")).map((r) => r[0])).toEqual(["balance/dave", "balance/erin", "balance/frank"]);
    expect(queries).toHaveLength(3 + 3 + 2 + 3);
    // dave was first set at version 3: nothing before it; at version 1 nothing is asked (there is no version 0).
    await page.fill("#changes-version", "3");
    await page.fill("#changes-limit", "100");
    await submit(page, "#changes", "#changes-table");
    expect((await rows(page, "#changes-rows")).find((r) => r[0] === "balance/dave")).toEqual(["balance/dave", "absent", balanceOf("dave", 3)]);
    queries.length = 0;
    await page.fill("#changes-version", "1");
    await submit(page, "#changes", "#changes-table");
    expect((await rows(page, "#changes-rows")).map((r) => r[1])).toEqual(Array(7).fill("absent"));
    expect(queries).toEqual([]);
    // The latest by default, in the other store, 100 a page.
    await page.selectOption("#store", "staking");
    await page.fill("#changes-version", "");
    await submit(page, "#changes", "#changes-table");
    // Set again with the same value is a change too: the store logs every set.
    expect(await rows(page, "#changes-rows")).toEqual([
      ["params/unbonding_time", "1814400s", "1814400s"],
      ...["cosmosvaloper1m9w", "cosmosvaloper1qx8", "cosmosvaloper1z3k"].map((a) => {
        const power = (v: number): string => JSON.stringify({ power: String(100 + 10 * ["cosmosvaloper1qx8", "cosmosvaloper1z3k", "cosmosvaloper1m9w"].indexOf(a) + v), jailed: false });
        return [`validator/${a}`, power(5), power(6)];
      }),
    ]);
    expect(await page.textContent("#changes-info")).toBe("version 6 of staking: 4 changes, 0 removed");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("reads a key typed as an even number of hex digits as hex and anything else as text, and says which", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    // Text, the switch off: it just works.
    await page.fill("#lookup-key", "balance/alice");
    expect(await page.textContent("#lookup-key-reading")).toBe("read as text · 13 bytes");
    expect((await lookup(page, "balance/alice")).verdict).toBe("✓ verified present at height 6");
    expect(await page.textContent("#lookup-key-shown")).toBe("balance/alice");
    // Hex, bare or after 0x, in either case.
    const bob = toHex(b("balance/bob"));
    for (const typed of [bob, `0x${bob.toUpperCase()}`]) {
      expect((await lookup(page, typed)).verified).toBe("true");
      expect([typed, await page.textContent("#lookup-key-reading"), await page.textContent("#lookup-key-shown")]).toEqual([typed, "read as hex · 11 bytes", "balance/bob"]);
    }
    // An odd number of hex digits is text; an even number is hex, unless the switch says text.
    await page.fill("#lookup-key", "abc");
    expect(await page.textContent("#lookup-key-reading")).toBe("read as text · 3 bytes");
    await page.fill("#lookup-key", "cafe");
    expect(await page.textContent("#lookup-key-reading")).toBe("read as hex · 2 bytes");
    expect((await lookup(page, "cafe", { text: true })).verdict).toBe("✓ verified absent at height 6");
    expect(await page.textContent("#lookup-key-reading")).toBe("read as text (switch on) · 4 bytes");
    expect(await page.textContent("#lookup-key-shown")).toBe("cafe");
    // The range's start and the history's key read the same way.
    await page.fill("#range-start", "balance/c");
    expect(await page.textContent("#range-start-reading")).toBe("read as text · 9 bytes");
    await submit(page, "#range", "#range-table");
    // carol is gone at the latest version.
    expect((await rows(page, "#range-rows"))[0]?.[0]).toBe("balance/dave");
    await page.fill("#history-key", toHex(b("balance/carol")));
    expect(await page.textContent("#history-key-reading")).toBe("read as hex · 13 bytes");
    await submit(page, "#history", "#history-table");
    expect((await rows(page, "#history-rows")).map((r) => r[0])).toEqual(["4", "3", "2", "1"]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shows a key's history a page at a time, newest first, and checks a row's proof at its version", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    // From a looked-up key: carol was set at versions 1 to 3 and removed at 4.
    await lookup(page, "balance/carol");
    await turn(page, "#lookup-history", "#history-table");
    expect(await rows(page, "#history-rows")).toEqual([
      ["4", "removed", "–", "check proof"],
      ...[3, 2, 1].map((v) => [String(v), "set", balanceOf("carol", v), "check proof"]),
    ]);
    expect(await page.inputValue("#history-key")).toBe("balance/carol");
    expect(await page.textContent("#history-info")).toBe("4 changes of balance/carol in bank, versions 1–4 (searched 1–6), the last page");
    // A row's proof at its version, checked in the browser: the value set at 3, and the key absent at 4.
    const verdictOf = async (v: number): Promise<[string | null, string | null]> => {
      const cell = `#history-rows tr[data-version="${v}"] td:last-child`;
      await page.click(`${cell} button`);
      const verdict = await page.waitForSelector(`${cell} [data-verified]`);
      return [await verdict.getAttribute("data-verified"), await verdict.textContent()];
    };
    expect(await verdictOf(3)).toEqual(["true", "✓ verified"]);
    expect(await verdictOf(4)).toEqual(["true", "✓ verified"]);
    // A value changed on its way: the proof does not hold it.
    await page.route("**/v1/query?**", async (route) => {
      const res = await route.fetch();
      const q = (await res.json()) as { value: string };
      await route.fulfill({ response: res, json: { ...q, value: toHex(b(balance(9_999_999))) } });
    });
    expect(await verdictOf(2)).toEqual(["false", "✗ not verified"]);
    await page.unroute("**/v1/query?**");
    expect(await verdictOf(1)).toEqual(["true", "✓ verified"]);

    // alice changed at every version: two a page, with Next and Previous.
    await page.fill("#history-key", "balance/alice");
    await page.fill("#history-limit", "2");
    await submit(page, "#history", "#history-table");
    const versions = async (p: Page = page): Promise<string[]> => (await rows(p, "#history-rows")).map((r) => r[0]!);
    expect(await versions()).toEqual(["6", "5"]);
    expect(await page.isHidden("#history-prev")).toBe(true);
    await turn(page, "#history-next", "#history-table");
    expect(await versions()).toEqual(["4", "3"]);
    await turn(page, "#history-next", "#history-table");
    expect(await versions()).toEqual(["2", "1"]);
    expect(await page.textContent("#history-info")).toMatch(/, the last page$/);
    expect(await page.isHidden("#history-next")).toBe(true);
    const last = page.url();
    expect(viewOf(page)).toEqual({ view: "history", store: "bank", key: toHex(b("balance/alice")), to: "6", limit: "2", at: "2" });
    await turn(page, "#history-prev", "#history-table");
    expect(await versions()).toEqual(["4", "3"]);
    // A reload shows the same page, and Previous still knows the pages before it.
    await page.reload();
    await page.waitForSelector("#history-table:not([hidden])");
    expect(await versions()).toEqual(["4", "3"]);
    await turn(page, "#history-prev", "#history-table");
    expect(await versions()).toEqual(["6", "5"]);
    expect(await page.isHidden("#history-prev")).toBe(true);
    // The last page's link opened anew (no stack): Previous finds the pages above by reading upwards.
    const again = await open(url, new URL(last).hash);
    await again.page.waitForSelector("#history-table:not([hidden])");
    expect(await versions(again.page)).toEqual(["2", "1"]);
    expect(await again.page.inputValue("#history-key")).toBe("balance/alice");
    await turn(again.page, "#history-prev", "#history-table");
    expect(await versions(again.page)).toEqual(["4", "3"]);
    await turn(again.page, "#history-prev", "#history-table");
    expect(await versions(again.page)).toEqual(["6", "5"]);
    expect(await again.page.isHidden("#history-prev")).toBe(true);
    expect(again.problems).toEqual([]);
    await again.page.close();
    expect(problems).toEqual([]);
    await page.close();
  });

  it("keeps the view in the URL: a reload shows it again, Back and Forward return to the view before, a link opens it", async () => {
    const { page, problems } = await open(url);
    await page.selectOption("#store", "bank");
    await lookup(page, "balance/alice", { height: "2" });
    expect(viewOf(page)).toEqual({ view: "lookup", store: "bank", key: toHex(b("balance/alice")), height: "2" });
    await lookup(page, "balance/bob");
    // A reload shows the last lookup again, its form filled in.
    await page.reload();
    await page.waitForSelector("#lookup-result:not([hidden])");
    expect(await page.textContent("#verdict")).toBe("✓ verified present at height 6");
    expect([await page.inputValue("#lookup-key"), await page.textContent("#lookup-key-shown")]).toEqual(["balance/bob", "balance/bob"]);
    // Back: the lookup before, at its height; Forward: the one after.
    await page.goBack();
    await expect.poll(() => page.textContent("#verdict")).toBe("✓ verified present at height 2");
    expect([await page.inputValue("#lookup-key"), await page.inputValue("#lookup-height")]).toEqual(["balance/alice", "2"]);
    expect(await page.textContent("#lookup-key-shown")).toBe("balance/alice");
    await page.goForward();
    await expect.poll(() => page.textContent("#verdict")).toBe("✓ verified present at height 6");
    expect(await page.textContent("#lookup-key-shown")).toBe("balance/bob");
    // Another view, then Back to the lookup: the other view is put away.
    await page.fill("#changes-version", "4");
    await submit(page, "#changes", "#changes-table");
    expect(viewOf(page)).toMatchObject({ view: "changes", version: "4" });
    await page.goBack();
    await expect.poll(() => page.isHidden("#changes-table")).toBe(true);
    await page.waitForSelector("#lookup-result:not([hidden])");
    expect(await page.textContent("#lookup-key-shown")).toBe("balance/bob");
    expect(problems).toEqual([]);
    await page.close();

    // A shared link, in another store: that store is picked (and highlighted) and the lookup shown.
    const link = `#view=lookup&store=staking&key=${toHex(b("params/unbonding_time"))}&height=3`;
    const shared = await open(url, link);
    await shared.page.waitForSelector("#lookup-result:not([hidden])");
    expect(await shared.page.textContent("#verdict")).toBe("✓ verified present at height 3");
    expect(await shared.page.inputValue("#store")).toBe("staking");
    expect(await shared.page.getAttribute("#stores tr.picked", "data-store")).toBe("staking");
    expect([await shared.page.inputValue("#lookup-key"), await shared.page.inputValue("#lookup-height")]).toEqual(["params/unbonding_time", "3"]);
    expect(shared.problems).toEqual([]);
    await shared.page.close();
  });

  it("shows a lookup's proof bytes on demand and copies them", async () => {
    const { page, problems } = await open(url);
    await (await launched()).grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    await page.selectOption("#store", "bank");
    await lookup(page, "balance/alice");
    const q = (await (await fetch(`${url}/v1/query?store=bank&key=${toHex(b("balance/alice"))}&height=6&prove=true`)).json()) as { proof: { store: string; app: string } };
    const toggle = "#lookup-proof button.toggle";
    expect(await page.isHidden(".proof-list")).toBe(true);
    await page.click(toggle);
    expect([await page.getAttribute(toggle, "aria-expanded"), await page.textContent(toggle)]).toEqual(["true", "Hide proof"]);
    expect(await page.locator(".proof-hex").allTextContents()).toEqual([q.proof.store, q.proof.app]);
    expect(await page.locator(".proof-name").allTextContents()).toEqual([
      `key proof in store bank · ${q.proof.store.length / 2} bytes `,
      `store proof under the app hash · ${q.proof.app.length / 2} bytes `,
    ]);
    // Copied to the clipboard.
    const proof = (i: number) => page.locator(".proof").nth(i);
    await proof(0).locator("button.copy").click();
    await expect.poll(() => proof(0).locator(".copied").textContent()).toBe("copied");
    expect(await page.evaluate("navigator.clipboard.readText()")).toBe(q.proof.store);
    // Where the clipboard is refused, the proof's text is selected (for Ctrl+C).
    await page.evaluate("navigator.clipboard.writeText = () => Promise.reject(new Error('refused'))");
    await proof(1).locator("button.copy").click();
    await expect.poll(() => proof(1).locator(".copied").textContent()).toMatch(/^(copied|selected: press Ctrl\+C to copy)$/);
    expect(await page.evaluate("window.getSelection().toString()")).toBe(q.proof.app);
    await page.click(toggle);
    expect(await page.isHidden(".proof-list")).toBe(true);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("follows the latest version while open, without a reload and leaving the forms alone", async () => {
    const chain = join(tempDir("iavlite-explorer-"), "chain");
    writeDemoChain(chain, 3);
    const live = await serve(["--import", "tsx", join(repo, "src/cli/main.ts"), "serve", chain, "--port", "0"]);
    const { page, problems } = await open(live);
    expect([await page.textContent("#latest"), await page.textContent("#summary")]).toEqual(["3", "2 stores · versions 1–3"]);
    await page.selectOption("#store", "staking");
    await page.fill("#lookup-key", "params/unbonding_time");
    await page.fill("#changes-version", "2");
    // Gone if the page were loaded again.
    await page.evaluate("window.stillHere = true");
    // The writer commits a version while the page is open.
    const appHashes = writeDemoChain(chain, 4);
    // Within the page's next looks at the service, however slow a busy machine makes them (a safety net under the
    // test's own timeout, not a clock the page must beat).
    await expect.poll(() => page.textContent("#latest"), { timeout: 50_000, interval: 250 }).toBe("4");
    expect(await page.textContent("#summary")).toBe("2 stores · versions 1–4");
    expect(await page.textContent("#app-hash")).toBe(appHashes[4]);
    expect((await rows(page, "#stores tbody")).map((r) => r.slice(0, 3))).toEqual([["bank", "1", "4"], ["staking", "1", "4"]]);
    expect(await page.textContent("#lookup-kept")).toBe("kept: 1–4");
    expect(await page.evaluate("window.stillHere")).toBe(true);
    expect([await page.inputValue("#store"), await page.inputValue("#lookup-key"), await page.inputValue("#changes-version")]).toEqual(["staking", "params/unbonding_time", "2"]);
    expect(await page.getAttribute("#stores tr.picked", "data-store")).toBe("staking");
    // The latest is now the new version.
    expect((await lookup(page, "params/unbonding_time")).verdict).toBe("✓ verified present at height 4");
    expect(problems).toEqual([]);
    await page.close();
  });
});

describe("the explorer page from a built copy of the package", () => {
  it("sends the compiled verifier modules as they are, and they verify in Chromium", async () => {
    // The package built for this run (test/global-setup.ts), laid out as `npm run build` makes it.
    const chain = join(tempDir("iavlite-explorer-"), "chain");
    const appHashes = writeDemoChain(chain, 3);
    const url = await serve([inject("cli"), "serve", chain, "--port", "0"]);
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
