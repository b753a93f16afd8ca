// Entry of the prune worker when iavlite runs from its TypeScript sources (tests, tsx): worker threads do not get
// the parent's loader flags, so tsx is registered here before the worker module loads. dist/ uses worker.js.
import { register } from "tsx/esm/api";

register();
const mod = await import("./worker.ts");
export default mod.default;
export const closeAll = mod.closeAll;
