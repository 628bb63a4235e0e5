// Decrypts with the page's nip44.js what go-nostr encrypted, and encrypts
// a reply for go-nostr to decrypt. Input (stdin, JSON): {sk, peer, payload}
// in hex and base64; output (stdout, JSON): {plain, reply}.
// Input: argv[2] = the static/js directory.
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import fs from 'node:fs';

const dir = process.argv[2];
const n = await import(pathToFileURL(path.join(dir, 'nip44.js')).href);
const { unhex } = await import(pathToFileURL(path.join(dir, 'sha256.js')).href);
const req = JSON.parse(fs.readFileSync(0, 'utf8'));
const ck = n.conversationKey(unhex(req.sk), unhex(req.peer));
const plain = n.decrypt(req.payload, ck);
console.log(JSON.stringify({ plain, reply: n.encrypt(plain + ' and back', ck) }));
