/**
 * Child processes of the serve bench (bench/serve.ts), forked with IPC:
 *
 * - `writer <dir> <seed> <initialSize> <skip> <versions> <paceMs>`: opens the multi-store copy in `dir`, generates the
 *   same workload the bench loaded (skipping its initial load and `skip` versions), answers "ready", and on "go"
 *   commits `versions` versions, one every `paceMs` (as blocks come), each timed (set/remove + commit), then answers
 *   a {@link WriterResult}.
 * - `plain-http <dir>`: the v1 `/v1/query` route on bare node:http, with the service's own query code (src/serve) and
 *   `JSON.stringify`: the floor that tells what fastify costs. Prints `listening on <url>`; exits on SIGTERM.
 * @module
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { MultiTree } from "../src/index.js";
import { httpError } from "../src/serve/errors.js";
import { Follower } from "../src/serve/follow.js";
import { parseHex } from "../src/serve/hex.js";
import { pickStore, queryKey } from "../src/serve/queries.js";
import { parseHeight } from "../src/serve/queries.js";
import { queryBody } from "../src/serve/routes-v1.js";
import { SERVE_CHECKPOINT, serveProfiles, type WriterResult } from "./serve.js";
import { skip } from "./subjects.js";
import { Workload } from "./workload.js";

const send = (m: unknown): void => void process.send!(m as object);

async function writer(dir: string, seed: number, initialSize: number, skipped: number, versions: number, paceMs: number): Promise<void> {
  const w = skip(new Workload(serveProfiles(initialSize), seed), skipped);
  const m = MultiTree.open(dir, { stores: w.storeNames, checkpointInterval: SERVE_CHECKPOINT });
  send("ready");
  await new Promise((r) => process.once("message", r));
  const r: WriterResult = { ops: 0, ns: [] };
  const start = performance.now();
  for (let v = 0; v < versions; v++) {
    const changes = w.nextVersion();
    const t0 = process.hrtime.bigint();
    for (const c of changes) {
      const t = m.tree(c.store);
      if (!c.delete) t.set(c.key, c.value!);
      else if (!t.remove(c.key)) throw new Error("bench: remove of a live key found nothing");
    }
    m.commit();
    r.ns.push(Number(process.hrtime.bigint() - t0));
    r.ops += changes.length;
    // The next block: IPC and the store's threads run meanwhile.
    const wait = start + (v + 1) * paceMs - performance.now();
    await new Promise((res) => (wait > 0 ? setTimeout(res, wait) : setImmediate(res)));
  }
  m.close();
  send(r);
  process.disconnect();
}

function plainHttp(dir: string): void {
  const follower = new Follower(MultiTree.openReadOnly(dir), 20);
  const server = http.createServer((req, res) => {
    let status = 200;
    let body: unknown;
    try {
      const url = new URL(req.url ?? "/", "http://x");
      if (url.pathname !== "/v1/query") throw Object.assign(new Error("no route"), { statusCode: 404 });
      const q = url.searchParams;
      const store = pickStore(follower, q.get("store") ?? undefined);
      const height = parseHeight(q.get("height") ?? undefined);
      const a = queryKey(follower, store, parseHex(q.get("key") ?? "", "key", 65_536), height, q.get("prove") === "true");
      body = queryBody(a);
    } catch (e) {
      const h = httpError(e);
      status = h.status;
      body = h.body;
    }
    res.writeHead(status, { "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
  });
  server.listen(0, "127.0.0.1", () => process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
  process.once("SIGTERM", () => server.close(() => process.exit(0)));
}

const [role, dir, ...rest] = process.argv.slice(2);
if (role === "writer") await writer(dir!, Number(rest[0]), Number(rest[1]), Number(rest[2]), Number(rest[3]), Number(rest[4]));
else if (role === "plain-http") plainHttp(dir!);
else throw new Error(`bench serve child: unknown role ${role}`);
