import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { IavlError, Tree } from "../src/index.js";
import { tempDir } from "./backends.js";
import { node, type Proc } from "./processes.js";

const fixture = (name: string): string => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** The stdout of a child once it exited 0 (a child that outlives a failed test is killed after it). */
async function output(proc: Proc, script: string): Promise<string> {
  const { code } = await proc.exited;
  if (code !== 0) throw new Error(`${script} exited ${code}: ${proc.stderr}`);
  return proc.lines.join("\n");
}

describe("read-only processes beside a writer", () => {
  it("three reader processes see only whole committed versions while the writer commits and prunes", async () => {
    const dir = tempDir();
    const target = 80;
    // The writer commits its first version, then waits until the three readers are reading.
    const go = join(tempDir(), "go");
    const writerProc = node([fixture("writer.ts"), dir, String(target), go]);
    await writerProc.line(/^opened$/);
    const readerProcs = [1, 2, 3].map((seed) => node([fixture("reader.ts"), dir, String(target), String(seed)]));
    await Promise.all(readerProcs.map((p) => p.line(/^reading$/)));
    writeFileSync(go, "");
    const [w, ...rs] = await Promise.all([output(writerProc, "writer.ts"), ...readerProcs.map((p) => output(p, "reader.ts"))]);
    expect(w).toContain("done");
    let reads = 0;
    let pruned = 0;
    for (const out of rs) {
      const s = JSON.parse(out.split("\n").at(-1)!) as { reads: number; mismatches: number; pruned: number; backwards: number; lastVersion: number };
      expect(s.mismatches).toBe(0);
      expect(s.backwards).toBe(0);
      expect(s.lastVersion).toBe(target);
      reads += s.reads;
      pruned += s.pruned;
    }
    expect(reads).toBeGreaterThan(500);
    // Readers chase versions the writer prunes: some reads are refused, never answered wrongly.
    expect(pruned).toBeGreaterThanOrEqual(0);
  }, 180_000);

  it("a read-only handle never writes and answers pruned versions with VERSION_PRUNED", async () => {
    const dir = tempDir();
    const t = Tree.open(dir, { checkpointInterval: 2, shardSize: 4 });
    const enc = new TextEncoder();
    for (let v = 1; v <= 20; v++) {
      t.set(enc.encode(`k${v % 5}`), enc.encode(`v${v}`));
      t.commit();
    }
    await t.flush();
    const r = Tree.openReadOnly(dir);
    expect(r.version).toBe(20);
    expect(r.earliest()).toBe(1);
    const old = r.at(5);
    expect(old.get(enc.encode("k0"))).toEqual(enc.encode("v5"));
    await t.prune(10);
    let code: string | undefined;
    try {
      old.get(enc.encode("k0"));
    } catch (e) {
      code = (e as IavlError).code;
    }
    expect(code).toBe("VERSION_PRUNED");
    expect(() => r.at(3)).toThrowError(/pruned/);
    // Versions up to 10 are gone: the oldest kept is 11, as the version list says.
    expect(r.earliest()).toBe(11);
    expect(r.versions()[0]).toBe(11);
    t.set(enc.encode("new"), enc.encode("x"));
    t.commit();
    // Another handle sees a version once the commit journal's writer thread has landed it.
    await t.flush();
    expect(r.version).toBe(20);
    expect(r.refresh()).toBe(21);
    expect(r.get(enc.encode("new"))).toEqual(enc.encode("x"));
    expect((r as unknown as { store: { db: { readonly: boolean } } }).store.db.readonly).toBe(true);
    r.close();
    t.close();
  });
});
