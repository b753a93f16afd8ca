/**
 * Read-only access to a multi-store folder (or a plain store folder) for query processes beside the writer: a
 * read-only handle per store, the commit marker read-only, the versions every store holds whole, the app hash and the
 * app-level proof of a store against it. Nothing here writes, takes the writer lock or holds a transaction.
 * @module
 */
import { existsSync } from "node:fs";
import { IavlError } from "../base/errors.js";
import { equalBytes, toHex } from "../base/bytes.js";
import { parseOptions } from "../base/options.js";
import { checkString, checkVersion } from "../base/validate.js";
import type { CommitmentProof, ReadonlyTree } from "../tree/readonly-tree.js";
import { MARKER_FILE, MarkerReader } from "../sqlite/commit-marker.js";
import { ReadOnlyStore } from "../store/read/read-only-store.js";
import { appProof } from "./app-proof.js";
import { commitInfoHash } from "./commit-info.js";
import { markerFile, multiStoreNames, plainStoreName, storeDir } from "./multi-folder.js";
import { multiReadOptionsSchema, type MultiReadOptions } from "./multi-options.js";

/**
 * A read-only handle on a multi-store folder (`MultiTree.openReadOnly`) or on a plain store folder, whose one store
 * is named after the folder. Versions move only on {@link refresh}, to the newest version that every store and the
 * commit marker hold whole; reads of a version see it whole or throw `VERSION_PRUNED` / `VERSION_ROLLED_BACK`.
 */
export class MultiReader {
  private closed = false;
  private whole = 0;
  /** App proofs of recent versions, with the app hash and store hashes they were made from. */
  private readonly proved = new Map<number, { appHash: Uint8Array; hashes: Map<string, Uint8Array>; proofs: Map<string, CommitmentProof> }>();

  private constructor(
    private readonly dir: string,
    /** Every store of the folder, by name: the app hash covers them all. */
    private readonly all: Map<string, ReadOnlyStore>,
    /** The stores served, sorted. */
    private served: string[],
    /** True when the caller named no stores: stores that join the folder later are served too. */
    private readonly everyStore: boolean,
    /** The commit marker; undefined for a plain store folder, which has no app hash. */
    private readonly marker: MarkerReader | undefined,
  ) {
    this.refresh();
  }

  /** The stores served, sorted. */
  get names(): readonly string[] {
    return this.served;
  }

  /**
   * Opens `dir` read-only: a multi-store folder (as `MultiTree.open` makes), or a plain store folder. Throws
   * `NOT_A_STORE` when it is neither, `INVALID_OPTIONS` when `options.stores` names a store it does not hold.
   */
  static open(dir: string, options?: MultiReadOptions): MultiReader {
    checkString(dir, "dir");
    const o = parseOptions(multiReadOptionsSchema, options);
    const multi = multiStoreNames(dir);
    const names = multi ?? [plainStoreName(dir)];
    const unknown = (o.stores ?? []).filter((n) => !names.includes(n));
    if (unknown.length > 0) {
      throw new IavlError("INVALID_OPTIONS", `invalid options: stores: ${dir} has no store ${unknown.join(", ")} (stores: ${names.join(", ")})`);
    }
    const all = new Map<string, ReadOnlyStore>();
    let marker: MarkerReader | undefined;
    try {
      if (multi === undefined) all.set(names[0]!, ReadOnlyStore.open(dir));
      else {
        for (const n of multi) all.set(n, ReadOnlyStore.open(storeDir(dir, n)));
        const file = markerFile(dir);
        if (!existsSync(file)) throw new IavlError("NOT_A_STORE", `${dir} has stores but no commit marker (${MARKER_FILE})`);
        marker = MarkerReader.open(file);
      }
      return new MultiReader(dir, all, [...(o.stores ?? names)].sort(), o.stores === undefined, marker);
    } catch (e) {
      for (const s of all.values()) s.close();
      marker?.close();
      throw e;
    }
  }

  /** True for a multi-store folder (with an app hash), false for a plain store folder. */
  get multi(): boolean {
    return this.marker !== undefined;
  }

  /** The newest version every store holds whole, as of the last {@link refresh} (0: none yet). */
  get latest(): number {
    this.ensureOpen();
    return this.whole;
  }

  /** Moves to the newest version every store and the commit marker hold whole, and returns it (after a rollback, maybe older). */
  refresh(): number {
    this.ensureOpen();
    // The marker first: a version it completed was committed by every store before.
    let v = this.marker?.whole() ?? Number.MAX_SAFE_INTEGER;
    if (this.marker !== undefined) this.addJoined();
    for (const s of this.all.values()) {
      const latest = s.refresh();
      // A store that joined the folder and has not committed yet is in no whole version.
      if (latest > 0 || this.marker === undefined) v = Math.min(v, latest);
    }
    this.whole = v;
    return v;
  }

  /** Opens the stores that joined the folder since: the app hashes of the versions after a join cover them. */
  private addJoined(): void {
    for (const n of multiStoreNames(this.dir) ?? []) {
      if (this.all.has(n)) continue;
      this.all.set(n, ReadOnlyStore.open(storeDir(this.dir, n)));
      if (this.everyStore) this.served = [...this.served, n].sort();
    }
  }

  /** The oldest version every store still holds (0 when none). */
  earliest(): number {
    this.ensureOpen();
    let v = 0;
    for (const s of this.all.values()) v = Math.max(v, s.earliest());
    return v;
  }

  /** The read-only handle of served store `name`; `INVALID_ARGUMENT` when it is not served. */
  store(name: string): ReadOnlyStore {
    this.ensureOpen();
    const s = this.names.includes(name) ? this.all.get(name) : undefined;
    if (s === undefined) throw new IavlError("INVALID_ARGUMENT", `no store named ${String(name)} (stores: ${this.names.join(", ")})`);
    return s;
  }

  /** A view of store `name` at whole version `version` (≤ {@link latest}). */
  at(name: string, version: number): ReadonlyTree {
    const s = this.store(name);
    this.checkWhole(version);
    // Of the history refresh() found whole: a rollback since then makes it VERSION_ROLLED_BACK, never the new one.
    return s.atRefreshed(version);
  }

  /** The root hash of every store (served or not) at whole version `version`, each read checked whole. */
  storeHashes(version: number): Map<string, Uint8Array> {
    this.ensureOpen();
    this.checkWhole(version);
    // Begin every read before taking any hash, so that a rollback in between shows as VERSION_ROLLED_BACK. A store
    // that joined the folder after `version` is not under its app hash.
    const held = [...this.all].filter(([, s]) => s.version > 0);
    // Before every store began (a folder made from a snapshot) there is no version, not one of no stores.
    const began = Math.min(...held.map(([, s]) => s.firstVersion()));
    if (version < began) throw new IavlError("VERSION_NOT_FOUND", `version ${version} was never committed here (the stores began at version ${began})`);
    const views = held.filter(([, s]) => s.firstVersion() <= version).map(([n, s]) => [n, s.atRefreshed(version)] as const);
    return new Map(views.map(([n, view]) => [n, view.hash]));
  }

  /**
   * The app hash of whole version `version`: the one the commit marker recorded (recomputed from the stores' root
   * hashes if the marker lost its row). Null for a plain store folder.
   */
  appHashAt(version: number): Uint8Array | null {
    this.ensureOpen();
    if (this.marker === undefined) return null;
    this.checkWhole(version);
    // Read first: VERSION_ROLLED_BACK when a rollback since refresh() replaced the version, whose new app hash the
    // marker would otherwise give.
    const hashes = this.storeHashes(version);
    return this.marker.appHashAt(version) ?? commitInfoHash(hashes);
  }

  /**
   * The ICS23 proof (existence, `tendermintSpec`) that store `name` had its root hash at `version` under the app hash
   * of `version`: key = the store name in UTF-8, value = its root hash. Throws `INVALID_ARGUMENT` for a plain store
   * folder (no app hash) or a store not served, `CORRUPT` when the stores' hashes do not give the recorded app hash.
   * Proofs are kept for recent versions and shared between calls: treat the result as read-only.
   */
  appProof(version: number, name: string): CommitmentProof {
    this.store(name);
    if (this.marker === undefined) throw new IavlError("INVALID_ARGUMENT", "a plain store folder has no app hash to prove a store against");
    this.checkWhole(version);
    const recorded = this.marker.appHashAt(version);
    let entry = this.proved.get(version);
    // The recorded app hash commits to every store's hash: while it is unchanged, so are the hashes kept for it.
    if (entry === undefined || recorded === undefined || !equalBytes(entry.appHash, recorded)) {
      const hashes = this.storeHashes(version);
      const computed = commitInfoHash(hashes);
      if (recorded !== undefined && !equalBytes(recorded, computed)) {
        throw new IavlError("CORRUPT", `the stores' root hashes at version ${version} give app hash ${toHex(computed)}, the marker recorded ${toHex(recorded)}`);
      }
      entry = { appHash: computed, hashes, proofs: new Map() };
      if (recorded !== undefined) {
        this.proved.set(version, entry);
        if (this.proved.size > 64) this.proved.delete(this.proved.keys().next().value!);
      }
    }
    let proof = entry.proofs.get(name);
    if (proof === undefined) entry.proofs.set(name, (proof = appProof(entry.hashes, name)));
    return proof;
  }

  /** Closes every handle; later calls throw `CLOSED`. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.all.values()) s.close();
    this.marker?.close();
  }

  private checkWhole(version: number): void {
    checkVersion(version);
    if (version > this.whole) {
      throw new IavlError("VERSION_NOT_FOUND", `version ${version} is not whole in every store yet (the latest is ${this.whole}; refresh() moves on)`);
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new IavlError("CLOSED", "the read-only multi-store is closed");
  }
}
