// secp256k1 and BIP-340 Schnorr signatures with BigInt, for signing Nostr
// events in the page. Not constant time: the key never leaves this
// browser, and the code that could time it runs in the same origin.

import { sha256, concat, utf8 } from './sha256.js';

const P = 0xfffffffffffffffffffffffffffffffffffffffffffffffffffffffefffffc2fn;
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const G = [0x79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798n,
  0x483ada7726a3c4655da4fbfc0e1108a8fd17b448a68554199c47d08ffb10d4b8n, 1n];

const mod = (a, m = P) => { const r = a % m; return r >= 0n ? r : r + m; };

function pow(b, e, m) {
  let r = 1n;
  b = mod(b, m);
  while (e > 0n) {
    if (e & 1n) r = (r * b) % m;
    b = (b * b) % m;
    e >>= 1n;
  }
  return r;
}

const inv = (a) => pow(a, P - 2n, P);

// Points are Jacobian [X, Y, Z]; Z = 0 is the point at infinity.
function dbl([x, y, z]) {
  if (z === 0n || y === 0n) return [0n, 1n, 0n];
  const yy = (y * y) % P;
  const s = (4n * x * yy) % P;
  const m = (3n * x * x) % P;
  const x3 = mod(m * m - 2n * s);
  const y3 = mod(m * (s - x3) - 8n * yy * yy);
  const z3 = (2n * y * z) % P;
  return [x3, y3, z3];
}

function add(p1, p2) {
  const [x1, y1, z1] = p1, [x2, y2, z2] = p2;
  if (z1 === 0n) return p2;
  if (z2 === 0n) return p1;
  const z1z1 = (z1 * z1) % P, z2z2 = (z2 * z2) % P;
  const u1 = (x1 * z2z2) % P, u2 = (x2 * z1z1) % P;
  const s1 = (y1 * z2 * z2z2) % P, s2 = (y2 * z1 * z1z1) % P;
  if (u1 === u2) return s1 === s2 ? dbl(p1) : [0n, 1n, 0n];
  const h = mod(u2 - u1), r = mod(s2 - s1);
  const hh = (h * h) % P, hhh = (h * hh) % P, v = (u1 * hh) % P;
  const x3 = mod(r * r - hhh - 2n * v);
  const y3 = mod(r * (v - x3) - s1 * hhh);
  const z3 = (z1 * z2 * h) % P;
  return [x3, y3, z3];
}

function mul(pt, k) {
  let r = [0n, 1n, 0n];
  let q = pt;
  while (k > 0n) {
    if (k & 1n) r = add(r, q);
    q = dbl(q);
    k >>= 1n;
  }
  return r;
}

function affine([x, y, z]) {
  if (z === 0n) return null;
  const zi = inv(z), zi2 = (zi * zi) % P;
  return [(x * zi2) % P, (y * zi2 * zi) % P];
}

const toBig = (b) => { let r = 0n; for (const x of b) r = (r << 8n) | BigInt(x); return r; };
function toBytes(n) {
  const out = new Uint8Array(32);
  for (let i = 31; i >= 0; i--) { out[i] = Number(n & 0xffn); n >>= 8n; }
  return out;
}

const tagCache = new Map();
function taggedHash(tag, ...msgs) {
  let th = tagCache.get(tag);
  if (!th) { th = sha256(utf8(tag)); tagCache.set(tag, th); }
  return sha256(concat(th, th, ...msgs));
}

function liftX(x) {
  if (x >= P) return null;
  const c = mod(x * x * x + 7n);
  const y = pow(c, (P + 1n) / 4n, P);
  if ((y * y) % P !== c) return null;
  return [x, (y & 1n) === 0n ? y : P - y, 1n];
}

function secretScalar(sk) {
  const d = toBig(sk);
  if (sk.length !== 32 || d <= 0n || d >= N) throw new Error('secret key out of range');
  return d;
}

/** validSecret reports whether 32 bytes are a usable secp256k1 secret key. */
export function validSecret(sk) {
  if (!(sk instanceof Uint8Array) || sk.length !== 32) return false;
  const d = toBig(sk);
  return d > 0n && d < N;
}

/** publicKey returns the 32-byte x-only public key of a secret key. */
export function publicKey(sk) {
  return toBytes(affine(mul(G, secretScalar(sk)))[0]);
}

/** randomSecret makes a new secret key from crypto.getRandomValues. */
export function randomSecret() {
  for (;;) {
    const sk = crypto.getRandomValues(new Uint8Array(32));
    if (validSecret(sk)) return sk;
  }
}

/** sign makes a BIP-340 signature of the 32-byte msg; aux is 32 random bytes (fresh ones if omitted). */
export function sign(msg, sk, aux = crypto.getRandomValues(new Uint8Array(32))) {
  const d0 = secretScalar(sk);
  const pt = affine(mul(G, d0));
  const d = (pt[1] & 1n) === 0n ? d0 : N - d0;
  const px = toBytes(pt[0]);
  const t = toBytes(d ^ toBig(taggedHash('BIP0340/aux', aux)));
  const k0 = mod(toBig(taggedHash('BIP0340/nonce', t, px, msg)), N);
  if (k0 === 0n) throw new Error('nonce is zero; sign again');
  const r = affine(mul(G, k0));
  const k = (r[1] & 1n) === 0n ? k0 : N - k0;
  const rx = toBytes(r[0]);
  const e = mod(toBig(taggedHash('BIP0340/challenge', rx, px, msg)), N);
  return concat(rx, toBytes(mod(k + e * d, N)));
}

/** verify checks a BIP-340 signature; it never throws on malformed input. */
export function verify(sig, msg, pub) {
  try {
    if (sig.length !== 64 || pub.length !== 32) return false;
    const pp = liftX(toBig(pub));
    if (!pp) return false;
    const r = toBig(sig.subarray(0, 32)), s = toBig(sig.subarray(32));
    if (r >= P || s >= N) return false;
    const e = mod(toBig(taggedHash('BIP0340/challenge', sig.subarray(0, 32), pub, msg)), N);
    const R = affine(add(mul(G, s), mul(pp, N - e)));
    if (!R || (R[1] & 1n) !== 0n) return false;
    return R[0] === r;
  } catch {
    return false;
  }
}

/** sharedX returns the x coordinate of sk times the point with x-only key pub (ECDH, as NIP-44 uses it); it throws on a key off the curve. */
export function sharedX(sk, pub) {
  if (!(pub instanceof Uint8Array) || pub.length !== 32) throw new Error('public key must be 32 bytes');
  const pp = liftX(toBig(pub));
  if (!pp) throw new Error('public key is not on the curve');
  return toBytes(affine(mul(pp, secretScalar(sk)))[0]);
}
