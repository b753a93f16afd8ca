/**
 * Rebuilds a tree from an export stream (SPEC §4), refusing any stream that is not a valid post-order IAVL.
 *
 * The peer that sent the stream may be hostile, so every item is checked as it arrives, sizes and hashes are
 * recomputed rather than trusted, and memory stays bounded by the tree height (plus the write batch) instead of by
 * whatever the stream claims.
 * @module
 */
import { z } from "zod";
import { IavlError } from "../base/errors.js";
import { parseOptions } from "../base/options.js";
import { checkIterable, MAX_KEY_BYTES } from "../base/validate.js";
import { latin1, latin1Bytes, toHex, type ByteString } from "../base/bytes.js";
import { digestBytes, EMPTY_DIGEST, innerHash, leafHash, sha256, toDigest, type Digest } from "../base/hash.js";
import type { ExportNode } from "./export-node.js";

/** A node the importer completed, hashed and sized; its children stay linked while the importer retains the tree. */
export class ImportedNode {
  left: ImportedNode | undefined = undefined;
  right: ImportedNode | undefined = undefined;
  /** A number the consumer may give it (the store import: its node key's sequence). */
  seq = 0;

  constructor(
    readonly key: ByteString,
    readonly value: Uint8Array | undefined,
    readonly version: number,
    readonly height: number,
    readonly size: number,
    readonly hash: Digest,
  ) {}
}

/** Default longest key accepted: 64 KiB, the longest `Tree.set` takes (`MAX_KEY_BYTES`). */
export const DEFAULT_MAX_KEY_LENGTH = MAX_KEY_BYTES;
/**
 * Default longest value accepted: 64 MiB, a bound on memory only. `Tree.set` takes less (`MAX_VALUE_BYTES`), so that
 * a leaf fits one snapshot item; an import takes whatever the SDK's items carry (which refuses items over 64e6 bytes).
 */
export const DEFAULT_MAX_VALUE_LENGTH = 64 * 1024 * 1024;
/**
 * Default and largest tree height accepted: 127. The SDK refuses heights over `math.MaxInt8` and cosmos/iavl keeps
 * heights in an `int8`; an AVL tree that tall would need more than 10^26 keys.
 */
export const DEFAULT_MAX_HEIGHT = 127;
/** Default number of completed nodes handed to `onNodes` at a time (cosmos/iavl flushes every 10,000). */
export const DEFAULT_BATCH_SIZE = 10_000;

/** Options of {@link Importer}; validated, a bad one throws `INVALID_OPTIONS`. */
export interface ImporterOptions {
  /**
   * The version being imported (the exported tree's version). Every node's version must lie in 1..version; the
   * root's may be lower (a version that changed nothing).
   */
  version: number;
  /** Longest key accepted, in bytes; default {@link DEFAULT_MAX_KEY_LENGTH}. */
  maxKeyLength?: number | undefined;
  /** Longest value accepted, in bytes; default {@link DEFAULT_MAX_VALUE_LENGTH}. */
  maxValueLength?: number | undefined;
  /** Greatest tree height accepted (at most 127); default {@link DEFAULT_MAX_HEIGHT}. */
  maxHeight?: number | undefined;
  /**
   * Receives every completed node, hashed, in post-order (children before parents), `batchSize` at a time and the
   * rest at {@link Importer.finish}. The nodes are handed out before the whole stream is known to be valid: write
   * them where they stay invisible until `finish` returns. An exception thrown here ends the import and propagates
   * unchanged.
   */
  onNodes?: ((batch: ImportedNode[]) => void) | undefined;
  /** Nodes per `onNodes` call; default {@link DEFAULT_BATCH_SIZE}. */
  batchSize?: number | undefined;
  /**
   * Keep the rebuilt tree in memory (default true): every node keeps `left`/`right`. With false, a node's children
   * references are dropped once the node has been handed to `onNodes` (or, without `onNodes`, never set), so memory
   * stays O(height + batchSize) and `finish` returns a root that carries only its hash, size, height and version.
   */
  retain?: boolean | undefined;
  /** When given, {@link Importer.finish} refuses a tree whose root hash differs. */
  expectedHash?: Uint8Array | undefined;
}

const optionsSchema = z
  .object({
    version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
    maxKeyLength: z.number().int().min(1).max(2 ** 31).optional(),
    maxValueLength: z.number().int().min(0).max(2 ** 31).optional(),
    maxHeight: z.number().int().min(0).max(DEFAULT_MAX_HEIGHT).optional(),
    onNodes: z.custom<(batch: ImportedNode[]) => void>((v) => typeof v === "function", "must be a function").optional(),
    batchSize: z.number().int().min(1).max(10_000_000).optional(),
    retain: z.boolean().optional(),
    expectedHash: z.custom<Uint8Array>((v) => v instanceof Uint8Array, "must be a Uint8Array").optional(),
  })
  .strict();

type State = "open" | "refused" | "finished";

/**
 * Rebuilds a tree from {@link ExportNode}s given one by one in the exporter's post-order, the way cosmos/iavl's
 * `Importer` does (a stack: a leaf is pushed; an inner node pops its right then its left child and is pushed), but
 * refusing everything that does not make a valid IAVL tree:
 *
 * - every key non-empty and at most `maxKeyLength`; every version an integer in 1..`version`; heights in 0..`maxHeight`;
 * - a leaf carries a value (at most `maxValueLength`), an inner node none;
 * - leaf keys strictly increase through the stream;
 * - an inner node of height h finds two completed children on the stack, h = max(left, right) + 1 and the heights
 *   differ by at most 1 (AVL);
 * - an inner node's key equals the smallest key of its right subtree;
 * - a node's version is at least its children's;
 * - at the end exactly one root is left (none for an empty tree), and its hash equals `expectedHash` when given.
 *
 * Sizes and hashes are computed here, never read from the stream. Every refusal is an
 * `IavlError("INVALID_SNAPSHOT")` whose message names the item index and the rule; after one, the importer refuses
 * everything. Nothing recurses, and the stack never holds more than `maxHeight + 1` subtrees.
 */
export class Importer {
  private readonly target: number;
  private readonly maxKey: number;
  private readonly maxValue: number;
  private readonly maxHeight: number;
  private readonly onNodes: ((batch: ImportedNode[]) => void) | undefined;
  private readonly batchSize: number;
  private readonly retain: boolean;
  private readonly expectedHash: Digest | undefined;

  /** Completed subtrees not yet joined under a parent, with the smallest key of each (its leftmost leaf's key). */
  private stack: ImportedNode[] = [];
  private minKeys: ByteString[] = [];
  private lastLeafKey: ByteString | undefined = undefined;
  private batch: ImportedNode[] = [];
  private items = 0;
  private state: State = "open";
  private refusal = "";

  /** @param options see {@link ImporterOptions}; `version` is required. */
  constructor(options: ImporterOptions) {
    const o = parseOptions(optionsSchema, options);
    this.target = o.version;
    this.maxKey = o.maxKeyLength ?? DEFAULT_MAX_KEY_LENGTH;
    this.maxValue = o.maxValueLength ?? DEFAULT_MAX_VALUE_LENGTH;
    this.maxHeight = o.maxHeight ?? DEFAULT_MAX_HEIGHT;
    this.onNodes = o.onNodes;
    this.batchSize = o.batchSize ?? DEFAULT_BATCH_SIZE;
    this.retain = o.retain ?? true;
    this.expectedHash = o.expectedHash === undefined ? undefined : toDigest(o.expectedHash);
  }

  /** Number of items accepted so far. */
  get count(): number {
    return this.items;
  }

  /** Adds the next item of the stream; throws `INVALID_SNAPSHOT` (and refuses all later calls) if it does not fit. */
  add(item: ExportNode): void {
    this.addNode(item);
  }

  /** @internal {@link add}, returning the hash it computed for the item (an audit compares it with the stored one). */
  addNode(item: ExportNode): Digest {
    this.checkOpen();
    if (typeof item !== "object" || item === null) this.refuse(`snapshot item ${this.items}: not an export node object`);
    const { key, value, version, height } = item;
    if (!(key instanceof Uint8Array)) this.refuse(`${this.at(item)}: the key must be a Uint8Array`);
    if (key.length === 0) this.refuse(`${this.at(item)}: keys must not be empty`);
    if (key.length > this.maxKey) this.refuse(`${this.at(item)}: key of ${key.length} bytes exceeds the limit of ${this.maxKey}`);
    if (typeof version !== "number" || !Number.isSafeInteger(version) || version < 1) this.refuse(`${this.at(item)}: the version must be an integer ≥ 1`);
    if (version > this.target) this.refuse(`${this.at(item)}: version ${version} is newer than the imported version ${this.target}`);
    if (typeof height !== "number" || !Number.isInteger(height) || height < 0 || height > this.maxHeight) {
      this.refuse(`${this.at(item)}: the height must be an integer in 0..${this.maxHeight}`);
    }

    let node: ImportedNode;
    if (height === 0) {
      if (!(value instanceof Uint8Array)) this.refuse(`${this.at(item)}: a leaf needs a value`);
      if (value.length > this.maxValue) this.refuse(`${this.at(item)}: value of ${value.length} bytes exceeds the limit of ${this.maxValue}`);
      // A valid post-order stream keeps at most one pending left subtree per level of the root plus the newest node.
      if (this.stack.length > this.maxHeight) {
        this.refuse(`${this.at(item)}: more than ${this.maxHeight + 1} subtrees pending; no tree of height ≤ ${this.maxHeight} has that`);
      }
      const k = latin1(key);
      if (this.lastLeafKey !== undefined && k <= this.lastLeafKey) {
        this.refuse(`${this.at(item)}: leaf keys must increase strictly (previous leaf ${short(latin1Bytes(this.lastLeafKey))})`);
      }
      node = new ImportedNode(k, value, version, 0, 1, leafHash(k, sha256(value), version));
      this.lastLeafKey = k;
      this.stack.push(node);
      this.minKeys.push(k);
    } else {
      if (value !== undefined && value !== null) this.refuse(`${this.at(item)}: an inner node must not carry a value`);
      const n = this.stack.length;
      if (n < 2) this.refuse(`${this.at(item)}: an inner node needs two completed children before it, found ${n}`);
      const left = this.stack[n - 2]!;
      const right = this.stack[n - 1]!;
      const want = (left.height > right.height ? left.height : right.height) + 1;
      if (height !== want) this.refuse(`${this.at(item)}: height must be 1 + max(child heights) = ${want} (children ${left.height}, ${right.height})`);
      if (left.height - right.height > 1 || right.height - left.height > 1) {
        this.refuse(`${this.at(item)}: child heights ${left.height} and ${right.height} differ by more than 1 (not an AVL tree)`);
      }
      const rightMin = this.minKeys[n - 1]!;
      if (latin1(key) !== rightMin) {
        this.refuse(`${this.at(item)}: an inner key must equal the smallest key of its right subtree, ${short(latin1Bytes(rightMin))}`);
      }
      if (version < left.version || version < right.version) {
        this.refuse(`${this.at(item)}: version ${version} is older than a child's (${left.version}, ${right.version})`);
      }
      const size = left.size + right.size;
      // Share the leaf's key string: the stream's copy is equal and need not be kept.
      node = new ImportedNode(rightMin, undefined, version, height, size, innerHash(height, size, version, left.hash, right.hash));
      if (this.retain || this.onNodes !== undefined) {
        node.left = left;
        node.right = right;
      }
      const leftMin = this.minKeys[n - 2]!;
      this.stack.length = n - 2;
      this.minKeys.length = n - 2;
      this.stack.push(node);
      this.minKeys.push(leftMin);
    }
    this.items++;
    if (this.onNodes !== undefined) {
      this.batch.push(node);
      if (this.batch.length >= this.batchSize) this.flush();
    }
    return node.hash;
  }

  /** Names `item` for a refusal; formatted only then, since hex for every node of a valid stream costs an audit 4 %. */
  private at(item: ExportNode): string {
    return `snapshot item ${this.items} (${describe(item)})`;
  }

  /**
   * Ends the stream: requires exactly one completed root (or no items at all, an empty tree), checks the root hash
   * against `expectedHash` when given, hands the last batch to `onNodes` and returns the root (undefined when empty).
   */
  finish(): ImportedNode | undefined {
    this.checkOpen();
    const at = `end of snapshot after ${this.items} items`;
    if (this.stack.length > 1) this.refuse(`${at}: ${this.stack.length} subtrees were never joined under one root (stream cut short?)`);
    const root = this.stack[0];
    if (this.expectedHash !== undefined) {
      const got = root === undefined ? EMPTY_DIGEST : root.hash;
      if (got !== this.expectedHash) {
        this.refuse(`${at}: root hash ${toHex(digestBytes(got))} differs from the expected ${toHex(digestBytes(this.expectedHash))}`);
      }
    }
    this.flush();
    this.state = "finished";
    this.stack = [];
    this.minKeys = [];
    this.lastLeafKey = undefined;
    return root;
  }

  private flush(): void {
    if (this.onNodes === undefined || this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    try {
      this.onNodes(batch);
    } catch (e) {
      this.state = "refused";
      this.refusal = "the onNodes callback failed";
      throw e;
    }
    if (!this.retain) {
      for (const n of batch) {
        n.left = undefined;
        n.right = undefined;
      }
    }
  }

  private checkOpen(): void {
    if (this.state === "finished") throw new IavlError("CLOSED", "the importer has finished");
    if (this.state === "refused") throw new IavlError("INVALID_SNAPSHOT", `the importer already refused the stream: ${this.refusal}`);
  }

  private refuse(message: string): never {
    this.state = "refused";
    this.refusal = message;
    // Drop what was built so far: a refused import must not pin memory.
    this.stack = [];
    this.minKeys = [];
    this.batch = [];
    throw new IavlError("INVALID_SNAPSHOT", message);
  }
}

/**
 * Rebuilds a whole tree from `nodes` with an {@link Importer}; returns its root (undefined for an empty stream).
 * Throws `INVALID_SNAPSHOT` as the importer does.
 */
export function buildTree(nodes: Iterable<ExportNode>, options: ImporterOptions): ImportedNode | undefined {
  checkIterable(nodes, "the nodes");
  const imp = new Importer(options);
  for (const n of nodes) imp.add(n);
  return imp.finish();
}

/** {@link buildTree} over an asynchronous stream, such as the output of `decodeItems` (wire.ts). */
export async function buildTreeAsync(
  nodes: AsyncIterable<ExportNode> | Iterable<ExportNode>,
  options: ImporterOptions,
): Promise<ImportedNode | undefined> {
  checkIterable(nodes, "the nodes", true);
  const imp = new Importer(options);
  for await (const n of nodes) imp.add(n);
  return imp.finish();
}

/** A short, safe description of an item for error messages (it may be malformed). */
function describe(item: ExportNode): string {
  const kind = item.height === 0 ? "leaf" : typeof item.height === "number" ? `inner h${item.height}` : "node";
  const key = item.key instanceof Uint8Array ? short(item.key) : "no key";
  return `${kind} ${key} v${String(item.version)}`;
}

function short(key: Uint8Array): string {
  return key.length <= 16 ? `0x${toHex(key)}` : `0x${toHex(key.subarray(0, 16))}…(${key.length} bytes)`;
}
