// An external client for the relay tests: nostr-tools (npm) signs an
// event, publishes it over the websocket after NIP-42 AUTH, reads it back,
// then reads it again through POST /query with a nostr-tools NIP-98 token.
// Input: RELAY_URL, HTTP_URL, SECRET_HEX, NODE_MODULES. Output: one JSON
// line on stdout. Any failure exits non-zero with the reason on stderr.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const mod = (p) => import(pathToFileURL(path.join(process.env.NODE_MODULES, 'nostr-tools/lib/esm', p)).href);
const { finalizeEvent, getPublicKey } = await mod('pure.js');
const { Relay } = await mod('relay.js');
const nip98 = await mod('nip98.js');

const hex = (s) => Uint8Array.from(s.match(/../g).map((b) => parseInt(b, 16)));
const sk = hex(process.env.SECRET_HEX);
const sign = (e) => finalizeEvent(e, sk);

const relay = new Relay(process.env.RELAY_URL);
relay.onauth = async (e) => sign(e);
await relay.connect();
for (let i = 0; !relay.challenge; i++) {
  if (i > 500) throw new Error('no AUTH challenge from the relay');
  await new Promise((r) => setTimeout(r, 10));
}
await relay.auth(async (e) => sign(e));

const ev = sign({ kind: 1, created_at: Math.floor(Date.now() / 1000), tags: [], content: 'from nostr-tools' });
await relay.publish(ev);

const got = await new Promise((resolve, reject) => {
  const seen = [];
  const sub = relay.subscribe([{ ids: [ev.id] }], {
    onevent: (e) => seen.push(e.id),
    oneose: () => { resolve(seen); sub.close(); },
    onclose: (reason) => reject(new Error('subscription closed: ' + reason)),
  });
});
relay.close();

const filters = [{ ids: [ev.id] }];
const url = process.env.HTTP_URL + '/query';
const auth = await nip98.getToken(url, 'POST', async (e) => sign(e), true, filters);
const resp = await fetch(url, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', Authorization: auth },
  body: JSON.stringify(filters),
});
const body = await resp.json();
process.stdout.write(JSON.stringify({
  pubkey: getPublicKey(sk),
  published: ev.id,
  websocket: got,
  query_status: resp.status,
  query: Array.isArray(body) ? body.map((e) => e.id) : body,
}) + '\n');
