// NIP-98 HTTP auth: a signed kind 27235 event naming the URL, the method
// and the body's hash, sent as "Authorization: Nostr <base64>".

import { sha256, hex, utf8 } from './sha256.js';

/**
 * authorization signs a NIP-98 header value for one request. The relay
 * takes a token once, so a nonce keeps the same request made twice within
 * a second (listing invites before and after one is made) from being
 * refused as a replay.
 */
export async function authorization(signer, url, method, body = '') {
  const tags = [['u', url], ['method', method.toUpperCase()]];
  if (body) tags.push(['payload', hex(sha256(utf8(body)))]);
  tags.push(['nonce', hex(crypto.getRandomValues(new Uint8Array(16)))]);
  const ev = await signer.sign({ kind: 27235, tags, content: '' });
  const json = utf8(JSON.stringify(ev));
  let bin = '';
  for (const b of json) bin += String.fromCharCode(b);
  return 'Nostr ' + btoa(bin);
}
