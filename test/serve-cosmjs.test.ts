/**
 * A client no one here wrote: @cosmjs/tendermint-rpc connects to `iavlite serve` (its version detection reads our
 * `status`), runs `abciQuery` with proofs at several heights while a writer process commits, and the proof ops verify
 * against the app hash the writer's `MultiTree.commit()` returned, checked as cosmjs's own QueryClient checks them.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Comet38Client, connectComet, isComet38Client, Tendermint37Client } from "@cosmjs/tendermint-rpc";
import { afterEach, describe, expect, it } from "vitest";
import { fromHex, toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { SERVE_STORES, serveModels, verifyAbci } from "./serve-check.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const main = join(root, "src/cli/main.ts");
const writerScript = fileURLToPath(new URL("./fixtures/serve-writer.ts", import.meta.url));

/** Every child started, so that a failing test leaves none running. */
const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});

/** Spawns `node --import tsx args…`, collecting stdout lines. */
function start(args: string[]): { lines: string[]; exited: Promise<number | null>; kill: (s: NodeJS.Signals) => void; stderr: () => string } {
  const p = spawn(process.execPath, ["--import", "tsx", ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  children.push(p);
  const lines: string[] = [];
  let buf = "";
  let err = "";
  p.stdout.on("data", (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split("\n");
    buf = parts.pop()!;
    lines.push(...parts);
  });
  p.stderr.on("data", (d: Buffer) => (err += d.toString()));
  return { lines, exited: new Promise((r) => p.on("exit", (c) => r(c))), kill: (s) => p.kill(s), stderr: () => err };
}

async function until<T>(fn: () => T | undefined, what: string, stderr: () => string): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const x = fn();
    if (x !== undefined) return x;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}: ${stderr()}`);
}

describe("@cosmjs/tendermint-rpc against iavlite serve", () => {
  it("connects, and its abciQuery proofs verify against the app hash at several heights", async () => {
    const dir = tempDir("iavlite-cosmjs-");
    const COUNT = 40;
    const writer = start([writerScript, dir, String(COUNT), "30", "30"]);
    const appHash = (v: number): string | undefined =>
      writer.lines.map((l) => (l.startsWith("{") ? (JSON.parse(l) as { v: number; app: string }) : undefined)).find((x) => x?.v === v)?.app;
    await until(() => appHash(3), "the writer's third version", writer.stderr);
    const server = start([main, "serve", dir, "--port", "0", "--refresh-ms", "0"]);
    const url = await until(() => server.lines.map((l) => /^listening on (.+)$/.exec(l)?.[1]).find((x) => x !== undefined), "serve", server.stderr);

    const model = serveModels();

    // Auto-detection reads node_info.version from our status and picks the CometBFT 0.38 client.
    const client = await connectComet(url);
    expect(isComet38Client(client)).toBe(true);
    let checked = 0;
    for (let round = 0; round < 4; round++) {
      const status = await client.status();
      const latest = status.syncInfo.latestBlockHeight;
      expect(toHex(status.syncInfo.latestAppHash)).toBe(await until(() => appHash(latest), `app hash ${latest}`, writer.stderr));
      for (const height of [Math.max(1, latest - 8), latest - 2, latest].filter((h) => h >= 1)) {
        for (const [i, store] of SERVE_STORES.entries()) {
          for (const key of [b(`k${(height * 17 + i) % 300}`), b(`k${height}x`)]) {
            const r = await client.abciQuery({ path: `/store/${store}/key`, data: key, height, prove: true });
            expect([r.code, r.height]).toEqual([0, height]);
            expect(toHex(r.key)).toBe(toHex(key));
            const want = model(i, height).get(key);
            expect(toHex(r.value)).toBe(want === undefined ? "" : toHex(want));
            const app = fromHex(await until(() => appHash(height), `app hash ${height}`, writer.stderr));
            const storeHash = verifyAbci(r.proof!.ops, store, key, r.value, app);
            expect(toHex(storeHash)).toBe(toHex(model(i, height).hash));
            checked++;
          }
        }
      }
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(checked).toBeGreaterThanOrEqual(48);

    // Failures come back as SDK response codes, which cosmjs hands over.
    const unknown = await client.abciQuery({ path: "/store/nope/key", data: b("k1"), prove: true });
    expect([unknown.code, unknown.codespace]).toEqual([6, "sdk"]);
    const future = await client.abciQuery({ path: "/store/bank/key", data: b("k1"), height: COUNT + 50 });
    expect(future.code).toBe(26);
    client.disconnect();

    // The other adaptors read the same answers.
    const tm37 = await Tendermint37Client.connect(url);
    const r37 = await tm37.abciQuery({ path: "/store/staking/key", data: b("k7"), prove: true });
    expect(r37.code).toBe(0);
    expect(r37.proof!.ops.map((o) => o.type)).toEqual(["ics23:iavl", "ics23:simple"]);
    tm37.disconnect();
    const c38 = await Comet38Client.connect(url);
    expect((await c38.abciInfo()).lastBlockHeight).toBeGreaterThan(0);
    c38.disconnect();

    expect(await writer.exited).toBe(0);
    server.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  }, 60_000);
});
