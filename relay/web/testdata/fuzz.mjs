// Random-input checks of the page's parsers, run by the Go test under
// node: bech32 and key parsing, the relay connection's frame handling and
// the store's intake of events. Each must reject bad input with an Error
// (or ignore it) and never crash. Input: {dir, seed, rounds}. Output:
// {checked, failures: [string]}.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const input = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => { s += d; });
  process.stdin.on('end', () => resolve(s));
}));
globalThis.requestAnimationFrame = (f) => setTimeout(f, 0);
const mod = (f) => import(pathToFileURL(path.join(input.dir, f)).href);
const { decode, decodeKey, encode } = await mod('bech32.js');
const { parseSecret, parsePubkey } = await mod('signer.js');
const { RelayConn } = await mod('relay.js');
const { Store } = await mod('store.js');
const { ReadState } = await mod('readstate.js');
const { NotifyPrefs } = await mod('prefs.js');
const { rows, firstNew } = await mod('history.js');
const { finalize, threadOf, threadTags, attestedOwner } = await mod('event.js');

// A small deterministic PRNG (mulberry32) so a failure can be replayed.
let state = input.seed >>> 0;
const rnd = () => {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (a) => a[Math.floor(rnd() * a.length)];
const alphabet = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l1QPZbio\u00e9\u{1F41D} -_';
const str = (n) => Array.from({ length: Math.floor(rnd() * n) }, () => pick([...alphabet])).join('');
const hex = (n) => Array.from({ length: n }, () => '0123456789abcdef'[Math.floor(rnd() * 16)]).join('');
const value = (depth = 0) => {
  const r = rnd();
  if (depth > 3 || r < 0.2) return pick([null, true, false, 0, -1, 1e308, NaN, '', 'x', hex(64), str(20)]);
  if (r < 0.5) return Array.from({ length: Math.floor(rnd() * 5) }, () => value(depth + 1));
  if (r < 0.7) return Object.fromEntries(Array.from({ length: Math.floor(rnd() * 4) }, () => [pick(['id', 'kind', 'tags', 'content', 'pubkey', 'sig', 'created_at', str(5)]), value(depth + 1)]));
  return str(40);
};

const failures = [];
let checked = 0;
const fail = (what, x, err) => { if (failures.length < 10) failures.push(`${what}(${JSON.stringify(x)?.slice(0, 200)}): ${err && err.stack ? err.stack.split('\n').slice(0, 2).join(' ') : err}`); };
const valid = encode('npub', Uint8Array.from({ length: 32 }, (_, i) => i * 7));

for (let i = 0; i < input.rounds; i++) {
  // bech32: mutations of a valid npub and random strings.
  let s = rnd() < 0.5 ? str(80) : [...valid].map((c) => (rnd() < 0.05 ? pick([...alphabet]) : c)).join('').slice(0, 40 + Math.floor(rnd() * 40));
  for (const f of [decode, (x) => decodeKey(x, 'npub'), parseSecret, parsePubkey]) {
    checked++;
    try {
      const out = f(s);
      if (f === parsePubkey && !/^[0-9a-f]{64}$/.test(out)) fail('parsePubkey', s, 'returned ' + out);
    } catch (e) {
      if (!(e instanceof Error) || !e.message) fail(f.name || 'decodeKey', s, e);
    }
  }
  // Frames from a hostile relay.
  const conn = new RelayConn('ws://x/', { sign: async (t) => t }, () => {});
  conn.subscribe([{ kinds: [1] }], { onevent: () => {} });
  const frame = rnd() < 0.3 ? str(60) : JSON.stringify(rnd() < 0.5 ? [pick(['EVENT', 'OK', 'EOSE', 'CLOSED', 'AUTH', 'NOTICE', 'x']), ...Array.from({ length: Math.floor(rnd() * 4) }, () => value())] : value());
  checked++;
  try { conn.receive(frame); conn.receive(JSON.stringify(['EVENT', 'web1', value()])); } catch (e) { fail('receive', frame, e); }
  // Events with hostile tags and content into the store and the thread helpers.
  const store = new Store();
  const sk = Uint8Array.from({ length: 32 }, (_, j) => (j + i) % 251 + 1);
  const tags = Array.from({ length: Math.floor(rnd() * 6) }, () => Array.from({ length: Math.floor(rnd() * 5) }, () => pick(['e', 'p', 'h', 'd', 'auth', 'name', 'root', 'reply', '', hex(64), str(10)])));
  const ev = finalize({ kind: pick([0, 5, 7, 9, 9005, 39000, 39002, 39008, 40003, 40008, 40100, 45001, 45003, 20001, 20002, 30078, 1]), tags, content: rnd() < 0.3 ? JSON.stringify(value()) : str(50), created_at: Math.floor(rnd() * 2e9) }, sk);
  checked++;
  try {
    store.add(ev); store.ephemeral(ev); threadOf(ev); threadTags(ev); attestedOwner(ev);
    for (const ch of store.channels.keys()) { store.channelMessages(ch); store.members(ch); const msgs = store.channelMessages(ch); rows(msgs, { days: true, newID: firstNew(msgs, { t: 1, ids: [ev.id] }, () => true) }); store.gone(ch); }
    new ReadState({ store, me: ev.pubkey, conn: null }).take(ev);
    new NotifyPrefs({ store, me: ev.pubkey }).take(ev);
    store.reactionsOf(ev.id); store.content(ev); store.deleted(ev); store.name(ev.pubkey); store.isAgent(ev.pubkey);
  } catch (e) { fail('store', ev, e); }
}
process.stdout.write(JSON.stringify({ checked, failures }));
process.exit(0);
