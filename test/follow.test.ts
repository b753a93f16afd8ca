/**
 * Live replicas (`follow`): a version's operations, replayed in order, reach the writer's root hash even when a key
 * is touched several times in one version; a replica started from the service's snapshot follows the writer version
 * by version, resumes where it committed, starts again from a snapshot when the service pruned what it needs, and
 * stops with CORRUPT, at its last good version, when the service's history is not the one it holds.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { follow, isIavlError, MultiTree, toHex, Tree, type FollowOptions } from "../src/index.js";
import { startServer } from "../src/serve/server.js";
import { tempDir } from "./backends.js";
import { b, rng } from "./helpers.js";

/** Applies a random version to `t`: sets, removes, and keys touched twice (set-set, set-remove, remove-set). */
function randomVersion(t: Tree, seed: number, keys = 60, ops = 40): void {
  const rand = rng(seed);
  for (let i = 0; i < ops; i++) {
    const key = b(`k${Math.floor(rand() * keys)}`);
    const r = rand();
    if (r < 0.3) t.remove(key);
    else t.set(key, b(`v${seed}-${i}`));
    if (r > 0.85) t.remove(key);
    if (r > 0.95) t.set(key, b(`again${seed}-${i}`));
  }
}

/** Follows `url` into `dir` until `until(version)` is true; returns the replica's last version. */
async function followUntil(url: string, dir: string, until: (v: number) => boolean, o: FollowOptions = {}): Promise<number> {
  const stop = new AbortController();
  const last = await follow(url, dir, {
    waitMs: 200,
    retryMs: 20,
    ...o,
    signal: stop.signal,
    onNote: o.onNote,
    onVersion: (v) => {
      o.onVersion?.(v);
      if (until(v)) stop.abort();
    },
  });
  return last;
}

describe("a version's operations", () => {
  it("replayed in order reach the writer's hash at every version, keys touched twice included", () => {
    const dir = tempDir();
    const w = Tree.open(dir, { checkpointInterval: 3 });
    const replica = Tree.memory();
    const r = Tree.openReadOnly(dir);
    try {
      for (let v = 1; v <= 30; v++) {
        randomVersion(w, v);
        const { hash } = w.commit();
        const [got] = [...r.operations(v, v)];
        expect(got!.version).toBe(v);
        expect(toHex(got!.hash)).toBe(toHex(hash));
        for (const op of got!.ops) {
          if (op.value === null) replica.remove(op.key);
          else replica.set(op.key, op.value);
        }
        expect(toHex(replica.commit().hash)).toBe(toHex(hash));
      }
      expect([...r.operations(5, 7)].map((x) => x.version)).toEqual([5, 6, 7]);
      expect(() => r.operations(7, 5)).toThrow(/must not be after/);
    } finally {
      r.close();
      w.close();
    }
  });
});

describe("follow", () => {
  it("starts from the snapshot, follows the writer, resumes, and starts again after a pruned gap", async () => {
    const src = tempDir();
    const stores = ["bank", "staking"];
    // keepRecent: the source prunes as it goes, far behind what the replica needs (it commits only as the replica
    // follows, below).
    const w = MultiTree.open(src, { stores, checkpointInterval: 4, keepRecent: 30 });
    const commit = (): string => {
      const v = w.version + 1;
      stores.forEach((s, i) => randomVersion(w.tree(s), v * 10 + i));
      return toHex(w.commit().appHash);
    };
    const apps = [""];
    for (let v = 1; v <= 6; v++) apps.push(commit());
    const service = await startServer(src, { port: 0 });
    const dir = `${tempDir()}/replica`;
    try {
      // Starts from the snapshot of the source's latest version (6), then follows the writer, which commits a
      // version while the snapshot is taken and one more each time the replica has caught up, up to 12: the
      // replica waits for each at the source (a long poll), however slow the machine.
      const started: string[] = [];
      const first = await followUntil(service.url, dir, (v) => v >= 12, {
        onNote: (n) => {
          started.push(n);
          if (/snapshot of version/.test(n)) apps.push(commit());
        },
        onVersion: (v) => {
          if (v === w.version && v < 12) apps.push(commit());
        },
      });
      expect(first).toBe(12);
      // One snapshot: the source kept every version the replica needed after it.
      expect(started.filter((n) => n.includes("snapshot"))).toEqual(["starting from the source's snapshot of version 6"]);
      const from = 6;
      const appAt = (v: number): string => {
        const m = MultiTree.openReadOnly(dir);
        try {
          return toHex(m.appHashAt(v)!);
        } finally {
          m.close();
        }
      };
      expect(appAt(first)).toBe(apps[first]);
      expect(appAt(from)).toBe(apps[from]);
      // Before its snapshot the replica holds no version.
      expect(() => appAt(from - 1)).toThrow(/was never committed here \(the stores began at version/);
      // Resumes where it committed.
      while (w.version < first + 3) apps.push(commit());
      const resumed = w.version;
      expect(await followUntil(service.url, dir, (v) => v === resumed)).toBe(resumed);
      expect(appAt(resumed)).toBe(apps[resumed]);
      // The writer goes on and prunes what the replica would need next: it starts again from a snapshot.
      while (w.version < resumed + 16) apps.push(commit());
      await w.prune(w.version - 5);
      // Two more versions once the replica has started its new snapshot, which it then follows to.
      const gapEnd = w.version;
      const notes: string[] = [];
      const onNote = (n: string): void => {
        notes.push(n);
        if (n.includes(`snapshot of version ${gapEnd}`)) for (let k = 0; k < 2; k++) apps.push(commit());
      };
      expect(await followUntil(service.url, dir, (v) => v === gapEnd + 2, { onNote })).toBe(gapEnd + 2);
      expect(notes).toContain(`the source no longer holds version ${resumed + 1}'s operations: starting again from its snapshot`);
      expect(appAt(gapEnd + 2)).toBe(apps[gapEnd + 2]);
    } finally {
      await service.close();
      w.close();
    }
    // A safety net: each step waits for the replica, which on a busy machine starts its threads slowly.
  }, 240_000);
});

describe("follow, when the source's history is not the replica's", () => {
  /** Commits versions 1–8 to `t`: the same keys and values up to 4, then values that carry `salt`. */
  const eight = (t: Tree, salt: string): Tree => {
    for (let v = 1; v <= 8; v++) {
      t.set(b(`k${v}`), b(v <= 4 ? `same${v}` : `${salt}${v}`));
      t.commit();
    }
    return t;
  };

  it("stops with CORRUPT when the source's version is another than the replica's", async () => {
    const [a, other] = [tempDir(), `${tempDir()}/replica`];
    eight(Tree.open(a), "a").close();
    eight(Tree.open(other), "b").close();
    const service = await startServer(a, { port: 0 });
    try {
      const err = await follow(service.url, other, { waitMs: 50 }).catch((e: unknown) => e);
      expect(isIavlError(err, "CORRUPT")).toBe(true);
      expect((err as Error).message).toMatch(/^at version 8 the root hash of .* here is [0-9a-f]{64} and the source's is [0-9a-f]{64}: the replica stopped at its last good version$/);
    } finally {
      await service.close();
    }
    const r = Tree.openReadOnly(other);
    expect(r.version).toBe(8);
    r.close();
  });

  it("commits nothing of a version whose operations do not make the source's hash", async () => {
    const src = tempDir();
    const w = eight(Tree.open(src), "a");
    const replica = `${tempDir()}/replica`;
    eight(Tree.open(replica), "a").close();
    const service = await startServer(src, { port: 0 });
    // A proxy that changes a value on its way in the operations feed (same length: the frame still parses).
    const proxy = http.createServer((req, res) => {
      void fetch(`${service.url}${req.url}`).then(async (up) => {
        let body = Buffer.from(await up.arrayBuffer());
        if (req.url!.startsWith("/v1/ops")) body = Buffer.from(body.toString("latin1").replaceAll("right9", "wrong9"), "latin1");
        res.writeHead(up.status, Object.fromEntries([...up.headers].filter(([k]) => k !== "content-length" && k !== "transfer-encoding")));
        res.end(body);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      w.set(b("k9"), b("right9"));
      w.commit();
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const err = await follow(url, replica, { waitMs: 50 }).catch((e: unknown) => e);
      expect(isIavlError(err, "CORRUPT")).toBe(true);
      expect((err as Error).message).toMatch(/^at version 9 the root hash/);
    } finally {
      proxy.close();
      await service.close();
      w.close();
    }
    const r = Tree.openReadOnly(replica);
    expect([r.version, r.get(b("k9"))]).toEqual([8, undefined]);
    r.close();
  });
});

describe("the replicas' feed", () => {
  it("streams for as long as its reader takes, past the service's request timeout", async () => {
    const src = tempDir();
    const t = Tree.open(src);
    for (let v = 1; v <= 3; v++) {
      for (let i = 0; i < 2_000; i++) t.set(b(`key-${i}`), new Uint8Array(200).fill(v));
      t.commit();
    }
    const hash = toHex(t.hash);
    t.close();
    const service = await startServer(src, { port: 0, requestTimeoutMs: 200 });
    try {
      for (const path of ["/v1/snapshot", "/v1/ops?from=1"]) {
        const res = await fetch(`${service.url}${path}`);
        expect(res.status).toBe(200);
        let bytes = 0;
        for await (const chunk of res.body!) {
          bytes += chunk.length;
          await new Promise((r) => setTimeout(r, 60));
        }
        expect(bytes).toBeGreaterThan(4 * 65_536);
      }
      const res = await fetch(`${service.url}/v1/snapshot`);
      expect(res.headers.get("x-iavlite-hash")).toBe(hash);
      await res.arrayBuffer();
    } finally {
      await service.close();
    }
  });

  it("ends a long poll that a closing service interrupts with the latest version and no error", async () => {
    const src = tempDir();
    const t = Tree.open(src);
    t.set(b("k"), b("v"));
    t.commit();
    t.close();
    // A poll (up to half the request timeout) far longer than the test's own timeout: were it waited out, the test
    // would fail.
    const service = await startServer(src, { port: 0, requestTimeoutMs: 600_000 });
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      errors.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stderr.write;
    try {
      const refreshes = async (): Promise<number> => Number(/^iavlite_refreshes_total (\d+)$/m.exec(await (await fetch(`${service.url}/metrics`)).text())![1]);
      const before = await refreshes();
      const waiting = fetch(`${service.url}/v1/ops?from=2&wait=300000`);
      // The request is waiting for version 2 once the service has looked for it (nothing else refreshes here).
      while ((await refreshes()) === before) await new Promise((r) => setTimeout(r, 10));
      await service.close();
      const res = await waiting;
      expect(res.status).toBe(200);
      expect(res.headers.get("x-iavlite-latest")).toBe("1");
      expect((await res.arrayBuffer()).byteLength).toBe(0);
      expect(errors.filter((e) => e.includes("iavlite serve"))).toEqual([]);
    } finally {
      process.stderr.write = write;
    }
  });
});
