/**
 * Options of a multi-store folder's handles (`MultiTree.open`, `MultiTree.openReadOnly`) and the store names they
 * take, validated with zod as the other public options are (options.ts).
 * @module
 */
import { z } from "zod";
import { parseOptions } from "../base/options.js";
import { openOptionsSchema, type ResolvedOpenOptions } from "./options.js";

/** A store name: 1–64 of letters, digits, `_`, `-`, `.` (it names a folder). */
export const storeNameSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "store names are 1–64 of A–Z a–z 0–9 _ . -");

/** Options of `MultiTree.open`: the store names, and the options every store opens with. */
export const multiOptionsSchema = openOptionsSchema
  // A multi-store's stores land each version inline: the folder's commit marker records versions every store holds.
  .omit({ commitJournal: true })
  .extend({
    /**
     * Names of the stores (letters, digits, `_`, `-`, `.`), at least one, no duplicates. On a folder that has
     * committed a version they must be the folder's stores, but for those of `addStores`.
     */
    stores: z
      .array(storeNameSchema)
      .min(1)
      .refine((a) => new Set(a).size === a.length, "store names must be distinct"),
    /**
     * Stores of `stores` that the folder may lack: those it lacks are created and join at the next version; those it
     * has open as usual, so that the same options open the folder again. Without them, a name the folder lacks is
     * refused (`STORES_MISMATCH`), so that a misspelled name never creates a store.
     */
    addStores: z
      .array(storeNameSchema)
      .refine((a) => new Set(a).size === a.length, "store names must be distinct")
      .optional(),
    // A version is whole only when the marker is written after every store's commit is on disk.
    durability: z.enum(["normal", "full"]).default("normal"),
  })
  .strict()
  .refine((o) => (o.addStores ?? []).every((n) => o.stores.includes(n)), { message: "every name of addStores must be in stores too", path: ["addStores"] });

/** Options of `MultiTree.open`. */
export type MultiTreeOptions = z.input<typeof multiOptionsSchema>;

/** Options of `MultiTree.open`, with defaults filled in. */
export type ResolvedMultiOptions = z.output<typeof multiOptionsSchema>;

/**
 * The options every store of the folder opens with: those of the folder without its store names, starting at
 * `initialVersion` (the version after the last whole one, so that a new store joins the others there).
 */
export function storeOpenOptions(o: ResolvedMultiOptions, initialVersion: number): ResolvedOpenOptions {
  const { stores: _, addStores: __, ...storeOptions } = o;
  return parseOptions(openOptionsSchema, { ...storeOptions, initialVersion });
}

/** Options of `MultiReader.open` (`MultiTree.openReadOnly`). */
export const multiReadOptionsSchema = z
  .object({
    /**
     * The stores to serve (default: every store in the folder). The others are still read for the app hash and the
     * app-level proofs, which cover every store.
     */
    stores: z
      .array(storeNameSchema)
      .min(1)
      .refine((a) => new Set(a).size === a.length, "store names must be distinct")
      .optional(),
  })
  .strict();

/** Options of `MultiTree.openReadOnly`. */
export type MultiReadOptions = z.input<typeof multiReadOptionsSchema>;
