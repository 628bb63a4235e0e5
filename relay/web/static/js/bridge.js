// The relay's HTTP bridge: POST /query with filters (the relay's
// substring "search" included), signed with NIP-98 by the person's key.

import { authorization } from './nip98.js';
import { wellFormed } from './event.js';

/** query runs filters on the relay and resolves with the well-formed events it returns. */
export async function query(signer, filters) {
  const body = JSON.stringify(filters);
  const res = await fetch('/query', {
    method: 'POST', body, credentials: 'omit', cache: 'no-store',
    headers: { 'Content-Type': 'application/json', Authorization: await authorization(signer, location.origin + '/query', 'POST', body) },
  });
  let data = null;
  try { data = await res.json(); } catch { data = null; }
  if (!res.ok) throw new Error(data && typeof data.error === 'string' ? data.error : `the relay answered ${res.status}`);
  return Array.isArray(data) ? data.filter(wellFormed) : [];
}
