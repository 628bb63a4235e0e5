// Checks the page's NIP-44 v2 module (static/js/nip44.js) under node
// against the official test vectors (testdata/nip44.vectors.json, from
// github.com/paulmillr/nip44). Prints "ok" or the failures, one a line,
// and exits 1 on any.
// Input: argv[2] = the static/js directory, argv[3] = the vectors file.
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const dir = process.argv[2];
const n = await import(pathToFileURL(path.join(dir, 'nip44.js')).href);
const { sha256, hex, unhex, utf8 } = await import(pathToFileURL(path.join(dir, 'sha256.js')).href);
const { publicKey } = await import(pathToFileURL(path.join(dir, 'schnorr.js')).href);
const v = JSON.parse(fs.readFileSync(process.argv[3], 'utf8')).v2;

const fails = [];
const check = (what, got, want) => { if (got !== want) fails.push(`${what}: got ${got}, want ${want}`); };
const throws = (what, f) => { try { f(); fails.push(`${what}: did not throw`); } catch { /* wanted */ } };

for (const t of v.valid.get_conversation_key) check(`conversation key ${t.note || t.sec1}`, hex(n.conversationKey(unhex(t.sec1), unhex(t.pub2))), t.conversation_key);
const mk = v.valid.get_message_keys;
for (const t of mk.keys) {
  const k = n.messageKeys(unhex(mk.conversation_key), unhex(t.nonce));
  check(`message keys ${t.nonce}`, [hex(k.chachaKey), hex(k.chachaNonce), hex(k.hmacKey)].join(), [t.chacha_key, t.chacha_nonce, t.hmac_key].join());
}
for (const [len, want] of v.valid.calc_padded_len) check(`padded length ${len}`, n.paddedLen(len), want);
for (const t of v.valid.encrypt_decrypt) {
  const ck = n.conversationKey(unhex(t.sec1), publicKey(unhex(t.sec2)));
  check(`conversation key of ${t.sec1}`, hex(ck), t.conversation_key);
  check(`encrypt ${t.plaintext.slice(0, 20)}`, n.encrypt(t.plaintext, ck, unhex(t.nonce)), t.payload);
  check(`decrypt ${t.plaintext.slice(0, 20)}`, n.decrypt(t.payload, ck), t.plaintext);
  check(`decrypt with the other side's key`, n.decrypt(t.payload, n.conversationKey(unhex(t.sec2), publicKey(unhex(t.sec1)))), t.plaintext);
}
for (const t of v.valid.encrypt_decrypt_long_msg) {
  const text = t.pattern.repeat(t.repeat);
  check(`long plaintext ${t.repeat}`, hex(sha256(utf8(text))), t.plaintext_sha256);
  const p = n.encrypt(text, unhex(t.conversation_key), unhex(t.nonce));
  check(`long payload ${t.repeat}`, hex(sha256(utf8(p))), t.payload_sha256);
  check(`long round trip ${t.repeat}`, n.decrypt(p, unhex(t.conversation_key)) === text, true);
}
for (const len of v.invalid.encrypt_msg_lengths) throws(`encrypt of length ${len}`, () => n.encrypt('a'.repeat(len), new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)));
for (const t of v.invalid.get_conversation_key) throws(`conversation key: ${t.note}`, () => n.conversationKey(unhex(t.sec1), unhex(t.pub2)));
for (const t of v.invalid.decrypt) throws(`decrypt: ${t.note}`, () => n.decrypt(t.payload, unhex(t.conversation_key)));

if (fails.length) { console.log(fails.join('\n')); process.exit(1); }
console.log('ok');
