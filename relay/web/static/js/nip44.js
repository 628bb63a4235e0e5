// NIP-44 v2 encryption (secp256k1 ECDH, HKDF-SHA256, ChaCha20,
// HMAC-SHA256, padding), for reading the harness's observer frames in
// the owner's browser. Not constant time, as schnorr.js.

import { sha256, concat, utf8 } from './sha256.js';
import { sharedX } from './schnorr.js';

// Lengths from the NIP-44 v2 specification.
const MIN_PLAINTEXT = 1;
const MAX_PLAINTEXT = 65535;
const MIN_PAYLOAD_B64 = 132;
const MAX_PAYLOAD_B64 = 87472;
const MIN_PAYLOAD = 99;
const MAX_PAYLOAD = 65603;
const BLOCK = 64;

/** hmacSHA256 is HMAC with SHA-256 (RFC 2104). */
export function hmacSHA256(key, ...msgs) {
  if (key.length > BLOCK) key = sha256(key);
  const k = new Uint8Array(BLOCK);
  k.set(key);
  const ipad = k.map((b) => b ^ 0x36), opad = k.map((b) => b ^ 0x5c);
  return sha256(concat(opad, sha256(concat(ipad, ...msgs))));
}

function hkdfExpand(prk, info, length) {
  const out = new Uint8Array(length);
  let t = new Uint8Array(0);
  for (let i = 1, off = 0; off < length; i++) {
    t = hmacSHA256(prk, t, info, Uint8Array.of(i));
    out.set(t.subarray(0, Math.min(t.length, length - off)), off);
    off += t.length;
  }
  return out;
}

const rotl = (x, n) => (x << n) | (x >>> (32 - n));

function quarter(s, a, b, c, d) {
  s[a] = (s[a] + s[b]) | 0; s[d] = rotl(s[d] ^ s[a], 16);
  s[c] = (s[c] + s[d]) | 0; s[b] = rotl(s[b] ^ s[c], 12);
  s[a] = (s[a] + s[b]) | 0; s[d] = rotl(s[d] ^ s[a], 8);
  s[c] = (s[c] + s[d]) | 0; s[b] = rotl(s[b] ^ s[c], 7);
}

/** chacha20 XORs data with the RFC 8439 ChaCha20 key stream (32-byte key, 12-byte nonce, counter from 0). */
export function chacha20(key, nonce, data) {
  const dv = (b) => new DataView(b.buffer, b.byteOffset, b.byteLength);
  const kv = dv(key), nv = dv(nonce);
  const init = new Uint32Array(16);
  init.set([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);
  for (let i = 0; i < 8; i++) init[4 + i] = kv.getUint32(i * 4, true);
  for (let i = 0; i < 3; i++) init[13 + i] = nv.getUint32(i * 4, true);
  const out = new Uint8Array(data.length);
  const s = new Uint32Array(16), ks = new Uint8Array(64), kd = dv(ks);
  for (let off = 0, ctr = 0; off < data.length; off += 64, ctr++) {
    init[12] = ctr;
    s.set(init);
    for (let r = 0; r < 10; r++) {
      quarter(s, 0, 4, 8, 12); quarter(s, 1, 5, 9, 13); quarter(s, 2, 6, 10, 14); quarter(s, 3, 7, 11, 15);
      quarter(s, 0, 5, 10, 15); quarter(s, 1, 6, 11, 12); quarter(s, 2, 7, 8, 13); quarter(s, 3, 4, 9, 14);
    }
    for (let i = 0; i < 16; i++) kd.setUint32(i * 4, (s[i] + init[i]) >>> 0, true);
    const n = Math.min(64, data.length - off);
    for (let i = 0; i < n; i++) out[off + i] = data[off + i] ^ ks[i];
  }
  return out;
}

/** conversationKey is NIP-44's key between a secret key and a peer's x-only public key (both 32 bytes). */
export function conversationKey(sk, pub) {
  return hmacSHA256(utf8('nip44-v2'), sharedX(sk, pub));
}

/** messageKeys derives the ChaCha20 key and nonce and the HMAC key of one message. */
export function messageKeys(convKey, nonce) {
  if (convKey.length !== 32) throw new Error('conversation key must be 32 bytes');
  if (nonce.length !== 32) throw new Error('nonce must be 32 bytes');
  const k = hkdfExpand(convKey, nonce, 76);
  return { chachaKey: k.subarray(0, 32), chachaNonce: k.subarray(32, 44), hmacKey: k.subarray(44, 76) };
}

/** paddedLen is the length NIP-44 pads a plaintext of len bytes to. */
export function paddedLen(len) {
  if (len <= 32) return 32;
  const next = 1 << (Math.floor(Math.log2(len - 1)) + 1);
  const chunk = next <= 256 ? 32 : next / 8;
  return chunk * (Math.floor((len - 1) / chunk) + 1);
}

function pad(text) {
  const b = utf8(text);
  if (b.length < MIN_PLAINTEXT || b.length > MAX_PLAINTEXT) throw new Error('invalid plaintext length');
  const out = new Uint8Array(2 + paddedLen(b.length));
  out[0] = b.length >> 8; out[1] = b.length & 0xff;
  out.set(b, 2);
  return out;
}

function unpad(p) {
  const len = (p[0] << 8) | p[1];
  if (len < MIN_PLAINTEXT || len > MAX_PLAINTEXT || p.length !== 2 + paddedLen(len)) throw new Error('invalid padding');
  return new TextDecoder('utf-8', { fatal: true }).decode(p.subarray(2, 2 + len));
}

const b64 = (b) => { let s = ''; for (const x of b) s += String.fromCharCode(x); return btoa(s); };
const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

function equal(a, b) {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

/** encrypt makes a NIP-44 v2 payload; nonce is 32 random bytes (fresh ones if omitted). */
export function encrypt(text, convKey, nonce = crypto.getRandomValues(new Uint8Array(32))) {
  const { chachaKey, chachaNonce, hmacKey } = messageKeys(convKey, nonce);
  const ct = chacha20(chachaKey, chachaNonce, pad(text));
  return b64(concat(Uint8Array.of(2), nonce, ct, hmacSHA256(hmacKey, nonce, ct)));
}

/** decrypt opens a NIP-44 v2 payload; it throws on any malformed or forged one. */
export function decrypt(payload, convKey) {
  if (typeof payload !== 'string' || payload.length < MIN_PAYLOAD_B64 || payload.length > MAX_PAYLOAD_B64) throw new Error('invalid payload length');
  if (payload[0] === '#') throw new Error('unknown encryption version');
  let d;
  try { d = unb64(payload); } catch { throw new Error('invalid base64'); }
  if (d.length < MIN_PAYLOAD || d.length > MAX_PAYLOAD) throw new Error('invalid data length');
  if (d[0] !== 2) throw new Error(`unknown encryption version ${d[0]}`);
  const nonce = d.subarray(1, 33), ct = d.subarray(33, d.length - 32), mac = d.subarray(d.length - 32);
  const { chachaKey, chachaNonce, hmacKey } = messageKeys(convKey, nonce);
  if (!equal(hmacSHA256(hmacKey, nonce, ct), mac)) throw new Error('invalid MAC');
  return unpad(chacha20(chachaKey, chachaNonce, ct));
}
