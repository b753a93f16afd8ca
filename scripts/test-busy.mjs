// `npm run test:busy`: the test suite beside two CPU-bound processes, as on a loaded CI machine (two shared cores
// and a load average of ~6). A test that passes only on an idle machine fails here. Prints how long the suite took.
import { spawn } from "node:child_process";

const BUSY = "for (;;) {}";
const loops = [0, 1].map(() => spawn(process.execPath, ["-e", BUSY], { stdio: "ignore" }));
const started = performance.now();
const suite = spawn("npm", ["test", "--", ...process.argv.slice(2)], { stdio: "inherit" });
const stop = () => loops.forEach((l) => l.kill("SIGKILL"));
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => (suite.kill(sig), stop()));
suite.on("exit", (code, signal) => {
  stop();
  const minutes = (performance.now() - started) / 60_000;
  console.log(`test:busy: npm test beside two busy loops ${code === 0 ? "passed" : "failed"} in ${minutes.toFixed(1)} min`);
  process.exitCode = code ?? (signal === null ? 1 : 128);
});
