// NIP-86 relay management calls, signed with NIP-98 by the person's key.
// The relay answers only its owner and admins; others get an error.

import { authorization } from './nip98.js';

/** manage calls method with params and resolves with its result; it throws the relay's reason. */
export async function manage(signer, method, params = []) {
  const body = JSON.stringify({ method, params });
  const res = await fetch('/', {
    method: 'POST', body, credentials: 'omit', cache: 'no-store',
    headers: { 'Content-Type': 'application/nostr+json+rpc', Authorization: await authorization(signer, location.origin + '/', 'POST', body) },
  });
  let data = {};
  try { data = await res.json(); } catch { data = {}; }
  if (!res.ok || data.error) throw new Error(typeof data.error === 'string' ? data.error : `the relay answered ${res.status}`);
  return data.result;
}
