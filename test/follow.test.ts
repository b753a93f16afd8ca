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
    // Each version in SQLite on commit()'s return, where the read-only handle reads it in step.
    const w = Tree.open(dir, { checkpointInterval: 3, commitJournal: false });
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

describe("follow, behind its source", () => {
  it("applies the versions read ahead many to one transaction, each hash-checked, and tells of them once they landed", async () => {
    const src = tempDir();
    const w = MultiTree.open(src, { stores: ["bank", "staking"] });
    const commit = (): string => {
      const v = w.version + 1;
      randomVersion(w.tree("bank"), v * 10);
      randomVersion(w.tree("staking"), v * 10 + 1);
      return toHex(w.commit().appHash);
    };
    commit();
    const service = await startServer(src, { port: 0 });
    const dir = `${tempDir()}/replica`;
    try {
      // From the snapshot of version 1, then version 2.
      const onNote = (n: string): void => void (n.includes("snapshot of version 1") && commit());
      expect(await followUntil(service.url, dir, (v) => v === 2, { onNote })).toBe(2);
      // A backlog of 119 versions.
      const apps = [""];
      for (let v = 3; v <= 121; v++) apps[v] = commit();
      // Versions told of in one synchronous run are a group; another connection sees its last one when told of its first.
      const groups: Array<{ versions: number[]; seen: number }> = [];
      let open: { versions: number[]; seen: number } | undefined;
      const reader = MultiTree.openReadOnly(dir);
      expect(
        await followUntil(service.url, dir, (v) => v === 121, {
          onVersion: (v) => {
            if (open === undefined) {
              groups.push((open = { versions: [], seen: reader.refresh() }));
              queueMicrotask(() => (open = undefined));
            }
            open.versions.push(v);
          },
        }),
      ).toBe(121);
      reader.close();
      expect(groups.flatMap((g) => g.versions)).toEqual(Array.from({ length: 119 }, (_, i) => i + 3));
      for (const g of groups) expect(g.seen).toBe(g.versions.at(-1));
      expect(groups.length).toBeLessThan(119);
      const m = MultiTree.openReadOnly(dir);
      for (let v = 3; v <= 121; v++) expect(toHex(m.appHashAt(v)!), `version ${v}`).toBe(apps[v]);
      m.close();
    } finally {
      await service.close();
      w.close();
    }
  });
});

describe("follow, when the source's history is not the replica's", () => {
  /** Commits versions 1–`n` to `t`: the same keys and values up to `same`, then values that carry `salt`. */
  const eight = (t: Tree, salt: string, n = 8, same = 4): Tree => {
    for (let v = t.version + 1; v <= n; v++) {
      t.set(b(`k${v}`), b(v <= same ? `same${v}` : `${salt}${v}`));
      t.commit();
    }
    return t;
  };

  /** The replica's version and root hash. */
  const stateOf = (dir: string): [number, string] => {
    const r = Tree.openReadOnly(dir);
    try {
      return [r.version, toHex(r.hash)];
    } finally {
      r.close();
    }
  };

  /** What `follow` throws for the replica in `dir` of the service `url` (and the notes it gave before). */
  const refusal = async (url: string, dir: string, notes: string[] = []): Promise<Error> => {
    const err = await follow(url, dir, { waitMs: 50, onNote: (n) => notes.push(n) }).catch((e: unknown) => e);
    expect(isIavlError(err, "CORRUPT"), String(err)).toBe(true);
    return err as Error;
  };

  const diverged = (at: number, shared: number, dir: string, url: string): RegExp =>
    new RegExp(
      `^the source's history is not this replica's: at version ${at} the source's root hash is [0-9a-f]{64} and this replica's is [0-9a-f]{64}; ` +
        `the last version both hold with the same root hash is ${shared}, and the replica was left as it is\\. ` +
        `To follow this source from there: iavlite rollback ${dir} --to ${shared} --yes, then iavlite follow ${url} ${dir}$`,
    );

  it("stops with CORRUPT naming the last version both share, at once, beside or ahead of the source; the replica untouched", async () => {
    const [a, other] = [tempDir(), `${tempDir()}/replica`];
    const w = eight(Tree.open(a), "a");
    await w.flush();
    eight(Tree.open(other), "b").close();
    const before = stateOf(other);
    const service = await startServer(a, { port: 0 });
    try {
      // Beside: both at 8.
      expect((await refusal(service.url, other)).message).toMatch(diverged(8, 4, other, service.url));
      expect(stateOf(other)).toEqual(before);
      // Ahead of a source rolled back to 2 that committed another history up to 6: compared at the source's latest.
      w.close();
      Tree.rollback(a, 2);
      const again = eight(Tree.open(a), "c", 6, 2);
      await again.flush();
      try {
        expect((await refusal(service.url, other)).message).toMatch(diverged(6, 2, other, service.url));
        expect(stateOf(other)).toEqual(before);
      } finally {
        again.close();
      }
    } finally {
      await service.close();
    }
  });

  it("waits for a source behind whose version agrees, and stops at the first poll that shows another history", async () => {
    const [a, other] = [tempDir(), `${tempDir()}/replica`];
    const w = eight(Tree.open(a), "a", 3);
    eight(Tree.open(other), "b").close();
    const service = await startServer(a, { port: 0 });
    try {
      const notes: string[] = [];
      const err = await follow(service.url, other, {
        waitMs: 50,
        onNote: (n) => {
          notes.push(n);
          // Told it waits for the source, at 3: the source commits version 4 of another history.
          if (n.startsWith("the source is at version 3")) eight(w, "z", 4, 3);
        },
      }).catch((e: unknown) => e);
      expect(isIavlError(err, "CORRUPT"), String(err)).toBe(true);
      expect(notes).toEqual(["the source is at version 3, behind this replica's 8: waiting for it to commit version 9"]);
      expect((err as Error).message).toMatch(diverged(4, 3, other, service.url));
    } finally {
      await service.close();
      w.close();
    }
    expect(stateOf(other)[0]).toBe(8);
  });

  it("names no version when none both hold agrees, and says to start again from a snapshot", async () => {
    const [a, other] = [tempDir(), `${tempDir()}/replica`];
    eight(Tree.open(a), "a", 8, 0).close();
    eight(Tree.open(other), "b", 8, 0).close();
    const service = await startServer(a, { port: 0 });
    try {
      expect((await refusal(service.url, other)).message).toMatch(
        new RegExp(`and no earlier version both hold agrees \\(the oldest both hold, 1\\); the replica was left as it is\\. To follow this source, start the replica again from its snapshot: move ${other} away, then run iavlite follow ${service.url} ${other}$`),
      );
    } finally {
      await service.close();
    }
  });

  it("commits nothing of a version whose operations do not make the source's hash, and lands the versions before it", async () => {
    const src = tempDir();
    const w = eight(Tree.open(src), "a");
    const replica = `${tempDir()}/replica`;
    eight(Tree.open(replica), "a").close();
    const service = await startServer(src, { port: 0 });
    // A proxy that changes a value on its way in the operations feed (same length: the frame still parses).
    const proxy = http.createServer((req, res) => {
      void fetch(`${service.url}${req.url}`).then(async (up) => {
        let body = Buffer.from(await up.arrayBuffer());
        if (req.url!.startsWith("/v1/ops")) body = Buffer.from(body.toString("latin1").replaceAll("right12", "wrong12"), "latin1");
        res.writeHead(up.status, Object.fromEntries([...up.headers].filter(([k]) => k !== "content-length" && k !== "transfer-encoding")));
        res.end(body);
      }).catch(() => res.destroy()); // the service closed under a poll the follower left behind when it stopped
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    try {
      // Versions 9–14 come in one answer (the proxy gathers it), and are applied in one group: 12 is wrong.
      for (let v = 9; v <= 14; v++) {
        w.set(b(`k${v}`), b(`right${v}`));
        w.commit();
      }
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const versions: number[] = [];
      const err = await follow(url, replica, { waitMs: 50, onVersion: (v) => versions.push(v) }).catch((e: unknown) => e);
      expect(isIavlError(err, "CORRUPT")).toBe(true);
      expect((err as Error).message).toMatch(/^at version 12 the root hash of .* here is [0-9a-f]{64} and the source's is [0-9a-f]{64}: the replica stopped at its last good version$/);
      expect(versions).toEqual([9, 10, 11]);
    } finally {
      proxy.close();
      await service.close();
      w.close();
    }
    const r = Tree.openReadOnly(replica);
    expect([r.version, r.get(b("k11")), r.get(b("k12"))]).toEqual([11, b("right11"), undefined]);
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
