// A NIP-34 reader nobody here wrote: nostr-tools verifies each event's id
// and signature, names its kind from its own table (kinds.js), and parses
// NIP-22 comments (nip22.js). Input: NODE_MODULES, and a JSON array of
// events on stdin. Output: one JSON array on stdout, per event
// {id, valid, kind, tags, root, rootKind}.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const mod = (p) => import(pathToFileURL(path.join(process.env.NODE_MODULES, 'nostr-tools/lib/esm', p)).href);
const { verifyEvent } = await mod('pure.js');
const kinds = await mod('kinds.js');
const nip22 = await mod('nip22.js');

const names = {};
for (const [k, v] of Object.entries(kinds)) if (typeof v === 'number' && names[v] === undefined) names[v] = k;

let input = '';
for await (const chunk of process.stdin) input += chunk;
const out = JSON.parse(input).map((e) => {
  const r = { id: e.id, valid: verifyEvent(e), kind: names[e.kind] ?? String(e.kind), tags: Object.fromEntries(e.tags.map((t) => [t[0], t.slice(1)])) };
  if (e.kind === kinds.Comment) {
    const p = nip22.parse(e);
    r.root = p.root?.id ?? '';
    r.rootKind = p.rootKind ?? 0;
  }
  return r;
});
process.stdout.write(JSON.stringify(out) + '\n');
