// Entry of the prune worker when iavlite runs from its TypeScript sources (tests, tsx): worker threads do not get
// the parent's loader flags, so tsx is registered here before the worker module loads. dist/ uses prune-thread.js.
import { register } from "tsx/esm/api";

register();
const mod = await import("./prune-thread.ts");
export default mod.default;
