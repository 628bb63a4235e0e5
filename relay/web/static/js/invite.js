// Links that bring a person in: #invite=<token> (redeemed with POST
// /invite under a NIP-98 token of the person's own key) and #login=<token>
// (the owner's one-time sign-in link printed by `buzzbox up`: POST /login
// hands this browser the owner's key, once). The fragment never reaches
// a server; it is cleared from the address bar as soon as it is read.

import { authorization } from './nip98.js';
import { parseSecret, saveKey, localSigner } from './signer.js';

/** takeLink reads and clears an #invite= or #login= fragment: {kind, token} or null. */
export function takeLink() {
  const m = /^#(invite|login)=([A-Za-z0-9_-]{1,200})$/.exec(location.hash);
  if (!m) return null;
  history.replaceState(null, '', location.pathname + location.search);
  return { kind: m[1], token: m[2] };
}

async function post(path, body, headers = {}) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body, credentials: 'omit', cache: 'no-store' });
  let data = {};
  try { data = await res.json(); } catch { data = {}; }
  return { status: res.status, data };
}

/** redeemInvite spends an invite token for signer's key; it resolves with {pubkey, channels} or throws the relay's reason. */
export async function redeemInvite(signer, token) {
  const body = JSON.stringify({ token });
  const url = location.origin + '/invite';
  const { status, data } = await post('/invite', body, { Authorization: await authorization(signer, url, 'POST', body) });
  if (status === 200) return { pubkey: String(data.pubkey || ''), channels: Array.isArray(data.channels) ? data.channels.map(String) : [] };
  const why = typeof data.error === 'string' ? data.error : `the relay answered ${status}`;
  if (status === 404) throw new Error('This invite is not known to the relay: ' + why);
  if (status === 410) throw new Error('This invite can no longer be used: ' + why);
  throw new Error('The invite was not accepted: ' + why);
}

/** redeemLogin trades a one-time login token for the key it stands for, keeps it, and returns a signer. */
export async function redeemLogin(token) {
  const { status, data } = await post('/login', JSON.stringify({ token }));
  if (status !== 200 || typeof data.nsec !== 'string') {
    const why = typeof data.error === 'string' ? data.error : `the relay answered ${status}`;
    throw new Error('The sign-in link did not work: ' + why + '. Run buzzbox up again for a fresh link, or sign in with your nsec.');
  }
  const sk = parseSecret(data.nsec);
  saveKey(sk);
  return localSigner(sk);
}
