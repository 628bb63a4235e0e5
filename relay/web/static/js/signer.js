// Signers: a key kept in this browser, or a NIP-07 extension. Either way
// the private key never leaves the browser.

import { finalize } from './event.js';
import { publicKey, randomSecret, validSecret } from './schnorr.js';
import { hex, unhex } from './sha256.js';
import { encode, decodeKey } from './bech32.js';
import { conversationKey, decrypt } from './nip44.js';

const storeKey = 'buzz.key';

/** localSigner signs with a secret key held in memory. */
export function localSigner(sk) {
  const pubkey = hex(publicKey(sk));
  const convKeys = new Map(); // peer → NIP-44 conversation key (one ECDH each)
  return {
    kind: 'key', pubkey, sign: async (tpl) => finalize(tpl, sk), nsec: () => encode('nsec', sk),
    /** decrypt opens a NIP-44 v2 payload peer sent to this key. */
    decrypt: async (peer, payload) => {
      let k = convKeys.get(peer);
      if (!k) { k = conversationKey(sk, unhex(peer)); convKeys.set(peer, k); }
      return decrypt(payload, k);
    },
  };
}

/** extensionSigner signs through window.nostr (NIP-07). */
export async function extensionSigner() {
  if (!window.nostr) throw new Error('no NIP-07 extension found in this browser');
  const pubkey = await window.nostr.getPublicKey();
  if (!/^[0-9a-f]{64}$/.test(pubkey)) throw new Error('the extension gave a malformed public key');
  return {
    kind: 'nip07', pubkey,
    sign: async (tpl) => {
      const ev = await window.nostr.signEvent({ kind: tpl.kind, tags: tpl.tags ?? [], content: tpl.content ?? '', created_at: tpl.created_at ?? Math.floor(Date.now() / 1000) });
      if (ev.pubkey !== pubkey) throw new Error('the extension signed with another key');
      return ev;
    },
    // NIP-07's optional nip44 API; without it the page cannot read what is encrypted to this key.
    decrypt: window.nostr.nip44?.decrypt ? (peer, payload) => window.nostr.nip44.decrypt(peer, payload) : null,
  };
}

/** parseSecret reads an nsec or 64 hex characters; it throws a message saying what is wrong. */
export function parseSecret(text) {
  const s = text.trim();
  let sk;
  if (s.startsWith('nsec1')) sk = decodeKey(s, 'nsec');
  else if (/^[0-9a-fA-F]{64}$/.test(s)) sk = unhex(s);
  else if (s.startsWith('npub1')) throw new Error('that is an npub (a public key); paste the nsec (secret key) instead');
  else throw new Error('paste an nsec1… secret key (or 64 hex characters)');
  if (!validSecret(sk)) throw new Error('that key is outside the secp256k1 range');
  return sk;
}

/** saveKey keeps a secret key in localStorage; loadKey reads it back. */
export function saveKey(sk) { localStorage.setItem(storeKey, hex(sk)); localStorage.removeItem('buzz.signer'); }
export function useExtension() { localStorage.setItem('buzz.signer', 'nip07'); localStorage.removeItem(storeKey); }
export function forget() { localStorage.removeItem(storeKey); localStorage.removeItem('buzz.signer'); }

/** kept tells whether this browser keeps a signer from an earlier visit (restore may still refuse it). */
export function kept() { return localStorage.getItem(storeKey) !== null || localStorage.getItem('buzz.signer') !== null; }

/** restore returns the signer kept from an earlier visit, or null. */
export async function restore() {
  if (localStorage.getItem('buzz.signer') === 'nip07' && window.nostr) return extensionSigner();
  const h = localStorage.getItem(storeKey);
  if (h && /^[0-9a-f]{64}$/.test(h) && validSecret(unhex(h))) return localSigner(unhex(h));
  return null;
}

export { randomSecret };

/** npub encodes a hex pubkey. */
export function npub(pk) { return encode('npub', unhex(pk)); }

/** parsePubkey reads an npub or 64 hex characters and returns hex. */
export function parsePubkey(text) {
  const s = text.trim();
  if (s.startsWith('npub1')) return hex(decodeKey(s, 'npub'));
  if (/^[0-9a-fA-F]{64}$/.test(s)) return s.toLowerCase();
  throw new Error('give an npub1… or 64 hex characters');
}
