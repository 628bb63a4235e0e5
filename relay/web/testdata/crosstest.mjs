// Runs the page's own crypto modules on the input the Go test gives on
// stdin and prints one JSON document of results on stdout.
// Input: {dir, vectors: [{sk, pk, aux, msg, sig, ok}], goEvents: [event],
//         sign: [{sk, tpl}], npubs: [{hex, npub}], nsecs: [{hex, nsec}], sha: [hex], attested: [event]}
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const input = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => { s += d; });
  process.stdin.on('end', () => resolve(s));
}));
const mod = (f) => import(pathToFileURL(path.join(input.dir, f)).href);
const { sign, verify, publicKey } = await mod('schnorr.js');
const { sha256, hex, unhex } = await mod('sha256.js');
const { encode, decodeKey } = await mod('bech32.js');
const { finalize, verifyEvent, eventID, attestedOwner } = await mod('event.js');

const out = { vectors: [], goEvents: [], signed: [], npubs: [], nsecs: [], sha: [], owners: [] };
for (const v of input.vectors) {
  const r = { verify: verify(unhex(v.sig), unhex(v.msg), unhex(v.pk)) };
  if (v.sk) {
    r.pk = hex(publicKey(unhex(v.sk))).toUpperCase();
    r.sig = hex(sign(unhex(v.msg), unhex(v.sk), unhex(v.aux))).toUpperCase();
  }
  out.vectors.push(r);
}
for (const ev of input.goEvents) out.goEvents.push({ verify: verifyEvent(ev), id: eventID(ev) });
for (const s of input.sign) out.signed.push(finalize(s.tpl, unhex(s.sk)));
for (const n of input.npubs) out.npubs.push({ npub: encode('npub', unhex(n.hex)), hex: hex(decodeKey(n.npub, 'npub')) });
for (const n of input.nsecs) out.nsecs.push({ nsec: encode('nsec', unhex(n.hex)), hex: hex(decodeKey(n.nsec, 'nsec')) });
for (const ev of input.attested || []) out.owners.push(attestedOwner(ev));
for (const h of input.sha) out.sha.push(hex(sha256(unhex(h))));
// With nostr-tools named (input.nostrTools: its package dir), the page's
// events must verify there and nostr-tools' events in the page.
if (input.nostrTools) {
  const tools = await import(pathToFileURL(path.join(input.nostrTools, 'lib', 'esm', 'pure.js')).href);
  out.toolsVerifyPage = out.signed.map((ev) => tools.verifyEvent({ ...ev }));
  out.pageVerifiesTools = input.sign.map((s) => {
    const ev = tools.finalizeEvent({ ...s.tpl }, unhex(s.sk));
    return verifyEvent(ev) && eventID(ev) === ev.id;
  });
}
process.stdout.write(JSON.stringify(out));
