/**
 * Validation of option objects with zod, so that a bad option names its field and rule.
 * @module
 */
import type { z } from "zod";
import { IavlError } from "./errors.js";

/** Parses `input` with `schema`, turning a failure into `IavlError("INVALID_OPTIONS")` naming each bad field. */
export function parseOptions<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return r.data;
  const detail = r.error.issues
    .map((i) => `${i.path.length > 0 ? i.path.join(".") : "options"}: ${i.message}`)
    .join("; ");
  throw new IavlError("INVALID_OPTIONS", `invalid options: ${detail}`);
}
