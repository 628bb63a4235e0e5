// Runs the check module named by ?t= (one of this folder's .mjs files)
// and leaves its result in window.viewTest for the Go test (viewChecks).
import { fail, finish } from './frame.mjs';

const name = new URLSearchParams(location.search).get('t') || '';
try {
  if (!/^[a-z]+\.mjs$/.test(name)) throw new Error(`no such check module ${JSON.stringify(name)}`);
  await import('./' + name);
} catch (e) {
  fail(`${name} stopped: ${e && e.stack || e}`);
}
finish();
