// The frame of the table checks that run the client's modules under node
// (nodeChecks: TestAgentsModule, TestAttentionRules, TestFindModules,
// TestGuideModule, TestHistoryModule, TestOutboxModule, TestWorkflowsModule): the modules are loaded from the js directory given as
// the first argument, eq records each difference, and report writes the
// {checked, failures} the Go test reads from stdout.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.argv[2];
// The store draws on animation frames, which node has not.
globalThis.requestAnimationFrame = (f) => setTimeout(f, 0);

/** mod imports the client's module f from the js directory. */
export const mod = (f) => import(pathToFileURL(path.join(dir, f)).href);

const failures = [];
let checked = 0;

/** eq checks that got is want, compared as JSON, and records a failure. */
export function eq(what, got, want) {
  checked++;
  if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${what} = ${JSON.stringify(got)}; want ${JSON.stringify(want)}`);
}

/** report writes the checks' result for the Go test and ends the process. */
export function report() {
  process.stdout.write(JSON.stringify({ checked, failures }));
  process.exit(0);
}
