/**
 * A client no one here wrote: @cosmjs/tendermint-rpc connects to `iavlite serve` (its version detection reads our
 * `status`), runs `abciQuery` with proofs at several heights while a writer process commits, and the proof ops verify
 * against the app hash the writer's `MultiTree.commit()` returned, checked as cosmjs's own QueryClient checks them.
 */
import { fileURLToPath } from "node:url";
import { Comet38Client, connectComet, isComet38Client, Tendermint37Client } from "@cosmjs/tendermint-rpc";
import { describe, expect, it } from "vitest";
import { fromHex, toHex } from "../src/index.js";
import { tempDir } from "./backends.js";
import { b } from "./helpers.js";
import { node, serve } from "./processes.js";
import { SERVE_STORES, serveModels, verifyAbci } from "./serve-check.js";

const writerScript = fileURLToPath(new URL("./fixtures/serve-writer.ts", import.meta.url));

describe("@cosmjs/tendermint-rpc against iavlite serve", () => {
  it("connects, and its abciQuery proofs verify against the app hash at several heights", async () => {
    const dir = tempDir("iavlite-cosmjs-");
    const COUNT = 40;
    const writer = node([writerScript, dir, String(COUNT), "30", "30"]);
    /** The app hash the writer printed for version `v`, once it has. */
    const appHash = async (v: number): Promise<string> => (JSON.parse((await writer.line(new RegExp(`^(\\{"v":${v},.*)$`)))[1]!) as { app: string }).app;
    await appHash(3);
    const { proc: server, url } = await serve(dir, "--refresh-ms", "0");

    const model = serveModels();

    // Auto-detection reads node_info.version from our status and picks the CometBFT 0.38 client.
    const client = await connectComet(url);
    expect(isComet38Client(client)).toBe(true);
    let checked = 0;
    for (let round = 0; round < 4; round++) {
      const status = await client.status();
      const latest = status.syncInfo.latestBlockHeight;
      expect(toHex(status.syncInfo.latestAppHash)).toBe(await appHash(latest));
      for (const height of [Math.max(1, latest - 8), latest - 2, latest].filter((h) => h >= 1)) {
        for (const [i, store] of SERVE_STORES.entries()) {
          for (const key of [b(`k${(height * 17 + i) % 300}`), b(`k${height}x`)]) {
            const r = await client.abciQuery({ path: `/store/${store}/key`, data: key, height, prove: true });
            expect([r.code, r.height]).toEqual([0, height]);
            expect(toHex(r.key)).toBe(toHex(key));
            const want = model(i, height).get(key);
            expect(toHex(r.value)).toBe(want === undefined ? "" : toHex(want));
            const app = fromHex(await appHash(height));
            const storeHash = verifyAbci(r.proof!.ops, store, key, r.value, app);
            expect(toHex(storeHash)).toBe(toHex(model(i, height).hash));
            checked++;
          }
        }
      }
      // The next round at a newer height, while the writer goes on.
      await writer.line(new RegExp(`^(\\{"v":${latest + 1},|done$)`));
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

    expect((await writer.exited).code).toBe(0);
    server.p.kill("SIGTERM");
    expect((await server.exited).code).toBe(0);
  }, 240_000);
});
