/**
 * The Cosmos SDK wire form of an export stream: protobuf `SnapshotIAVLItem`s, each length-delimited.
 *
 * Inside a Cosmos SDK multi-store snapshot every item is further wrapped in
 * `SnapshotItem { oneof item { SnapshotStoreItem store = 1; SnapshotIAVLItem iavl = 2; SnapshotExtensionMeta
 * extension = 3; SnapshotExtensionPayload extension_payload = 4; } }` (one `store` item names a store, the `iavl`
 * items of that store follow), and the delimited stream is zlib-compressed and cut into chunks by the snapshot
 * manager. {@link encodeItems}/{@link decodeItems} speak the bare `SnapshotIAVLItem` stream we exchange;
 * {@link encodeSnapshotItems}/{@link decodeSnapshotItems} speak the wrapped form (compression and chunk hashes are the
 * caller's business).
 *
 * Encoding omits default-valued fields as gogoproto does, so the bytes equal the SDK's for the same nodes.
 * @module
 */
import protobuf from "protobufjs/light.js";
import { IavlError } from "../base/errors.js";
import { checkBytes, checkIterable, checkObject, describe, MAX_ITEM_BYTES } from "../base/validate.js";
import type { ExportNode } from "../tree/export-node.js";

/**
 * Default largest item (after its length prefix) accepted: 64e6 bytes, the SDK's `snapshotMaxItemSize`, so any
 * stream the SDK accepts is accepted here.
 */
export const DEFAULT_MAX_ITEM_BYTES = MAX_ITEM_BYTES;

/** Bounds on what {@link decodeItems} and {@link decodeSnapshotItems} will buffer. */
export interface DecodeLimits {
  /** Largest item, in bytes, excluding its length prefix; longer ones are refused before any byte is buffered. */
  maxItemBytes?: number | undefined;
}

// The SDK's snapshot.proto (cosmos.store.snapshots.v1, formerly cosmos.base.snapshots.v1beta1), as protobufjs JSON.
const root = protobuf.Root.fromJSON({
  nested: {
    SnapshotItem: {
      oneofs: { item: { oneof: ["store", "iavl", "extension", "extensionPayload"] } },
      fields: {
        store: { type: "SnapshotStoreItem", id: 1 },
        iavl: { type: "SnapshotIAVLItem", id: 2 },
        extension: { type: "SnapshotExtensionMeta", id: 3 },
        extensionPayload: { type: "SnapshotExtensionPayload", id: 4 },
      },
    },
    SnapshotStoreItem: { fields: { name: { type: "string", id: 1 } } },
    SnapshotIAVLItem: {
      fields: { key: { type: "bytes", id: 1 }, value: { type: "bytes", id: 2 }, version: { type: "int64", id: 3 }, height: { type: "int32", id: 4 } },
    },
    SnapshotExtensionMeta: { fields: { name: { type: "string", id: 1 }, format: { type: "uint32", id: 2 } } },
    SnapshotExtensionPayload: { fields: { payload: { type: "bytes", id: 1 } } },
  },
});
const SnapshotItemType = root.lookupType("SnapshotItem");
const IavlItemType = root.lookupType("SnapshotIAVLItem");

/** The plain object protobufjs encodes; only non-default fields are set, as gogoproto writes them. */
interface IavlItemFields {
  key?: Uint8Array;
  value?: Uint8Array;
  version?: number;
  height?: number;
}

/** Throws `INVALID_ARGUMENT` unless `node` has the shape of an {@link ExportNode}. */
function checkNode(node: unknown): asserts node is ExportNode {
  checkObject(node, "an export node", false);
  const n = node as Partial<Record<keyof ExportNode, unknown>>;
  checkBytes(n.key, "an export node's key");
  if (n.value !== undefined) checkBytes(n.value, "an export node's value");
  for (const field of ["version", "height"] as const) {
    const x = n[field];
    if (typeof x !== "number" || !Number.isSafeInteger(x) || x < 0) {
      throw new IavlError("INVALID_ARGUMENT", `an export node's ${field} must be a non-negative integer, got ${describe(x)}`);
    }
  }
}

function iavlFields(node: ExportNode): IavlItemFields {
  checkNode(node);
  const m: IavlItemFields = {};
  if (node.key.length > 0) m.key = node.key;
  if (node.value !== undefined && node.value.length > 0) m.value = node.value;
  if (node.version !== 0) m.version = node.version;
  if (node.height !== 0) m.height = node.height;
  return m;
}

/** Encodes each node as a length-delimited `SnapshotIAVLItem` (one array per item; concatenate them to send). */
export function* encodeItems(nodes: Iterable<ExportNode>): Generator<Uint8Array> {
  checkIterable(nodes, "the nodes");
  for (const node of nodes) yield IavlItemType.encodeDelimited(iavlFields(node)).finish();
}

/** One item of the wrapped multi-store stream. */
export type SnapshotItem =
  /** Starts the items of the named store. */
  | { kind: "store"; name: string }
  /** One exported node of the current store. */
  | { kind: "iavl"; node: ExportNode }
  /** Starts the payloads of a snapshot extension. */
  | { kind: "extension"; name: string; format: number }
  /** One payload of the current extension. */
  | { kind: "extensionPayload"; payload: Uint8Array }
  /** An item of a kind this library does not know (the SDK's deprecated kv and schema items, say): its raw bytes. */
  | { kind: "unknown"; bytes: Uint8Array };

/**
 * Encodes stores as the SDK's wrapped stream: for each store a `SnapshotItem{store}` naming it, then a
 * `SnapshotItem{iavl}` per node, each length-delimited.
 */
export function* encodeSnapshotItems(stores: Iterable<{ name: string; nodes: Iterable<ExportNode> }>): Generator<Uint8Array> {
  checkIterable(stores, "the stores");
  for (const store of stores) {
    checkObject(store, "a store", false);
    if (typeof store.name !== "string") throw new IavlError("INVALID_ARGUMENT", `a store's name must be a string, got ${describe(store.name)}`);
    checkIterable(store.nodes, `the nodes of store ${store.name}`);
    yield SnapshotItemType.encodeDelimited({ store: store.name === "" ? {} : { name: store.name } }).finish();
    for (const node of store.nodes) yield SnapshotItemType.encodeDelimited({ iavl: iavlFields(node) }).finish();
  }
}

/**
 * Decodes a stream of length-delimited `SnapshotIAVLItem`s arriving in chunks of any size (an item may span many
 * chunks, a chunk may hold many items). Keys and values are copied out, so the chunks may be reused.
 *
 * Refused with `IavlError("INVALID_SNAPSHOT")`, naming the item index and byte offset: a length prefix over
 * `maxItemBytes` (before anything of it is buffered), a malformed length prefix, an item cut short by the end of the
 * stream, a malformed protobuf, a negative version or one beyond 2^53, a height outside 0..127 (Go keeps heights in
 * an `int8`). An absent key decodes as an empty key and an absent leaf value as an empty value, as the SDK does
 * (protobuf cannot tell empty from absent); the {@link Importer} judges the rest.
 */
export async function* decodeItems(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, limits?: DecodeLimits): AsyncGenerator<ExportNode> {
  for await (const f of frames(chunks, limits)) yield toExportNode(decodeMessage(IavlItemType, f, "SnapshotIAVLItem"), f);
}

/**
 * Decodes the SDK's wrapped stream of length-delimited `SnapshotItem`s, with the framing rules and refusals of
 * {@link decodeItems}. An item with no known field set comes out as `kind: "unknown"`.
 */
export async function* decodeSnapshotItems(
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  limits?: DecodeLimits,
): AsyncGenerator<SnapshotItem> {
  for await (const f of frames(chunks, limits)) {
    const m = decodeMessage(SnapshotItemType, f, "SnapshotItem");
    if (has(m, "iavl")) {
      yield { kind: "iavl", node: toExportNode(asRecord(m.iavl), f) };
    } else if (has(m, "store")) {
      yield { kind: "store", name: stringField(asRecord(m.store), "name") };
    } else if (has(m, "extension")) {
      const e = asRecord(m.extension);
      yield { kind: "extension", name: stringField(e, "name"), format: has(e, "format") ? Number(e.format) : 0 };
    } else if (has(m, "extensionPayload")) {
      yield { kind: "extensionPayload", payload: bytesField(asRecord(m.extensionPayload), "payload") };
    } else {
      yield { kind: "unknown", bytes: new Uint8Array(f.bytes) };
    }
  }
}

/** One length-delimited message: its bytes (a view, valid until the next frame), index and stream offset. */
export interface Frame {
  bytes: Uint8Array;
  index: number;
  offset: number;
}

function invalid(message: string, cause?: unknown): IavlError {
  return new IavlError("INVALID_SNAPSHOT", message, cause === undefined ? undefined : { cause });
}

/**
 * Splits the byte stream into messages. An item that lies wholly inside one chunk is handed out as a view of it; one
 * that spans chunks is gathered into a buffer of exactly its length, allocated only after the length passed the
 * limit, so memory never exceeds one item plus one chunk.
 */
export async function* frames(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, limits: DecodeLimits | undefined): AsyncGenerator<Frame> {
  checkIterable(chunks, "the snapshot chunks", true);
  const max = limits?.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
  if (!Number.isSafeInteger(max) || max < 0) {
    throw new IavlError("INVALID_ARGUMENT", `maxItemBytes must be a non-negative integer, got ${String(max)}`);
  }
  let index = 0;
  let offset = 0; // stream offset of the current item's length prefix
  let consumed = 0; // stream offset of the start of the current chunk
  // Length prefix being read (a uvarint may itself span chunks).
  let len = 0;
  let scale = 1;
  let prefixBytes = 0;
  // Body being gathered across chunks.
  let body: Uint8Array | undefined;
  let filled = 0;
  for await (const chunk of chunks) {
    if (!(chunk instanceof Uint8Array)) throw new IavlError("INVALID_ARGUMENT", "snapshot chunks must be Uint8Arrays");
    let p = 0;
    while (p < chunk.length) {
      if (body === undefined) {
        if (prefixBytes === 0) offset = consumed + p;
        const b = chunk[p++]!;
        len += (b & 0x7f) * scale;
        scale *= 0x80;
        prefixBytes++;
        if (len > max) {
          throw invalid(`snapshot item ${index} at byte ${offset}: length ${len}${b & 0x80 ? "+" : ""} exceeds the limit of ${max} bytes`);
        }
        if (b & 0x80) {
          if (prefixBytes >= 10) throw invalid(`snapshot item ${index} at byte ${offset}: malformed length prefix`);
          continue;
        }
        const n = len;
        len = 0;
        scale = 1;
        prefixBytes = 0;
        if (chunk.length - p >= n) {
          yield { bytes: chunk.subarray(p, p + n), index: index++, offset };
          p += n;
        } else {
          body = new Uint8Array(n);
          filled = 0;
        }
      } else {
        const take = Math.min(body.length - filled, chunk.length - p);
        body.set(chunk.subarray(p, p + take), filled);
        filled += take;
        p += take;
        if (filled === body.length) {
          const bytes = body;
          body = undefined;
          yield { bytes, index: index++, offset };
        }
      }
    }
    consumed += chunk.length;
  }
  if (prefixBytes > 0) throw invalid(`snapshot item ${index} at byte ${offset}: the stream ends inside a length prefix`);
  if (body !== undefined) throw invalid(`snapshot item ${index} at byte ${offset}: truncated, ${filled} of ${body.length} bytes present`);
}

type Fields = Record<string, unknown>;

function decodeMessage(type: protobuf.Type, f: Frame, name: string): Fields {
  try {
    checkWireTypes(type, f.bytes);
    return type.decode(f.bytes) as unknown as Fields;
  } catch (e) {
    // protobufjs throws RangeError/Error (and deep group nesting can overflow the stack): all mean a bad item.
    const why = e instanceof Error ? e.message : String(e);
    throw invalid(`snapshot item ${f.index} at byte ${f.offset}: malformed ${name} protobuf (${why})`, e);
  }
}

/**
 * protobufjs decodes a known field by its declared type whatever wire type the tag says, so it would accept items
 * gogoproto refuses ("wrong wireType"). Walk the tags first (with protobufjs's Reader, recursing into known
 * sub-messages, which the schema limits to one level) and refuse what Go refuses: field number 0, a stray end-group
 * tag, a known field with the wrong wire type.
 */
function checkWireTypes(type: protobuf.Type, bytes: Uint8Array): void {
  const r = protobuf.Reader.create(bytes);
  while (r.pos < r.len) {
    const tag = r.uint32();
    const id = tag >>> 3;
    const wireType = tag & 7;
    if (id === 0) throw new Error(`illegal field number 0 at offset ${r.pos}`);
    if (wireType === 4) throw new Error(`unexpected end-group tag at offset ${r.pos}`);
    const field = type.fieldsById[id];
    if (field === undefined) {
      r.skipType(wireType);
      continue;
    }
    const sub = field.resolvedType;
    const want = sub instanceof protobuf.Type ? 2 : protobuf.types.basic[field.type as keyof typeof protobuf.types.basic];
    if (wireType !== want) throw new Error(`field ${field.name} (${id}) has wire type ${wireType}, expected ${String(want)}`);
    if (sub instanceof protobuf.Type) checkWireTypes(sub, r.bytes());
    else r.skipType(wireType);
  }
}

// protobufjs puts defaults on the prototype; a field was on the wire only if it is an own property.
function has(m: Fields, field: string): boolean {
  return Object.prototype.hasOwnProperty.call(m, field) && m[field] !== null && m[field] !== undefined;
}

function asRecord(v: unknown): Fields {
  return typeof v === "object" && v !== null ? (v as Fields) : {};
}

function bytesField(m: Fields, field: string): Uint8Array {
  const v = m[field];
  // Copy: protobufjs hands out views of the chunk, which would pin it (and change if the caller reuses it).
  return has(m, field) && v instanceof Uint8Array ? new Uint8Array(v) : new Uint8Array(0);
}

function stringField(m: Fields, field: string): string {
  const v = m[field];
  return has(m, field) && typeof v === "string" ? v : "";
}

function toExportNode(m: Fields, f: Frame): ExportNode {
  const at = `snapshot item ${f.index} at byte ${f.offset}`;
  let version = 0;
  if (has(m, "version")) {
    // int64 comes as a Long (or a number without the long package); its decimal form is exact either way.
    const text = String(m.version);
    const big = /^-?[0-9]+$/.test(text) ? BigInt(text) : -1n;
    if (big < 0n) throw invalid(`${at}: negative version ${text}`);
    if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw invalid(`${at}: version ${text} exceeds 2^53 - 1`);
    version = Number(big);
  }
  const height = has(m, "height") ? Number(m.height) : 0;
  if (!Number.isInteger(height) || height < 0 || height > 127) throw invalid(`${at}: height ${height} outside 0..127`);
  const node: ExportNode = { key: bytesField(m, "key"), version, height };
  // A leaf's empty value is absent on the wire; an inner node keeps a value only if one was sent, to be refused.
  if (height === 0 || has(m, "value")) node.value = bytesField(m, "value");
  return node;
}
