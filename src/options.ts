/**
 * Options of the public constructors, validated with zod so that a bad option names its field and rule.
 * @module
 */
import { z } from "zod";
import { IavlError } from "./errors.js";

/** Options of {@link Tree.memory}. */
export const memoryOptionsSchema = z
  .object({
    /** The version the first commit gets (as cosmos/iavl `InitialVersion`); default 1. */
    initialVersion: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict();

/** Options of {@link Tree.memory}. */
export type MemoryOptions = z.input<typeof memoryOptionsSchema>;

/** Parses `input` with `schema`, turning a failure into `IavlError("INVALID_OPTIONS")` naming each bad field. */
export function parseOptions<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  const detail = r.error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : "options"}: ${i.message}`)
    .join("; ");
  throw new IavlError("INVALID_OPTIONS", `invalid options: ${detail}`);
}
