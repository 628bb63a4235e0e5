// bech32 (BIP-173) for NIP-19's npub and nsec: 32-byte payloads only.

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GEN = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

function polymod(values) {
  let chk = 1;
  for (const v of values) {
    const b = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((b >>> i) & 1) chk ^= GEN[i];
  }
  return chk >>> 0;
}

function expand(hrp) {
  const out = [];
  for (const c of hrp) out.push(c.charCodeAt(0) >> 5);
  out.push(0);
  for (const c of hrp) out.push(c.charCodeAt(0) & 31);
  return out;
}

function convert(data, from, to, pad) {
  let acc = 0, bits = 0;
  const out = [];
  const maxv = (1 << to) - 1;
  for (const v of data) {
    acc = (acc << from) | v;
    bits += from;
    while (bits >= to) { bits -= to; out.push((acc >> bits) & maxv); }
  }
  if (pad) {
    if (bits > 0) out.push((acc << (to - bits)) & maxv);
  } else if (bits >= from || ((acc << (to - bits)) & maxv)) {
    throw new Error('bech32: bad padding');
  }
  return out;
}

/** encode writes bytes under the human-readable part hrp. */
export function encode(hrp, bytes) {
  const data = convert(bytes, 8, 5, true);
  const values = expand(hrp).concat(data, [0, 0, 0, 0, 0, 0]);
  const mod = polymod(values) ^ 1;
  const sum = [];
  for (let i = 0; i < 6; i++) sum.push((mod >>> (5 * (5 - i))) & 31);
  return hrp + '1' + data.concat(sum).map((d) => CHARSET[d]).join('');
}

/** decode reads a bech32 string and returns {hrp, bytes}; it throws a readable error on bad input. */
export function decode(str) {
  const s = str.trim();
  if (s.length > 200) throw new Error('bech32: too long');
  if (s !== s.toLowerCase() && s !== s.toUpperCase()) throw new Error('bech32: mixed case');
  const low = s.toLowerCase();
  const pos = low.lastIndexOf('1');
  if (pos < 1 || pos + 7 > low.length) throw new Error('bech32: no separator or checksum');
  const hrp = low.slice(0, pos);
  const data = [];
  for (const c of low.slice(pos + 1)) {
    const d = CHARSET.indexOf(c);
    if (d < 0) throw new Error('bech32: invalid character ' + JSON.stringify(c));
    data.push(d);
  }
  if (polymod(expand(hrp).concat(data)) !== 1) throw new Error('bech32: checksum does not match (a typo?)');
  return { hrp, bytes: Uint8Array.from(convert(data.slice(0, -6), 5, 8, false)) };
}

/** decodeKey reads an npub or nsec and returns its 32 bytes, checking the prefix. */
export function decodeKey(str, hrp) {
  const { hrp: got, bytes } = decode(str);
  if (got !== hrp) throw new Error(`expected an ${hrp}, got ${got}`);
  if (bytes.length !== 32) throw new Error(`${hrp}: expected 32 bytes, got ${bytes.length}`);
  return bytes;
}
