// External check of what git-credential-nostr and git-sign-nostr produce,
// using nostr-tools and @noble (not our code).
//
// Usage: node verify.mjs NODE_MODULES < request.json
// request: {"nip98": {"token", "url", "method"}, "nipgs": {"armor", "payload"}}
// Prints one JSON object of results; exits 0 only if every check passed.
import { pathToFileURL } from 'node:url'
import { join } from 'node:path'
import { readFileSync } from 'node:fs'

const nm = process.argv[2]
const load = (p) => import(pathToFileURL(join(nm, p)).href)
const nip98 = await load('nostr-tools/lib/esm/nip98.js')
const pure = await load('nostr-tools/lib/esm/pure.js')
const { schnorr } = await load('@noble/curves/secp256k1.js')
const { sha256 } = await load('@noble/hashes/sha2.js')

const req = JSON.parse(readFileSync(0, 'utf8'))
const out = {}
let ok = true

if (req.nip98) {
  const { token, url, method } = req.nip98
  const event = await nip98.unpackEventFromToken(token)
  out.nip98_verify_event = pure.verifyEvent(event)
  try {
    out.nip98_validate_token = await nip98.validateToken(token, url, method)
  } catch (e) {
    out.nip98_validate_token = false
    out.nip98_error = String(e && e.message || e)
  }
  out.nip98_pubkey = event.pubkey
  ok = ok && out.nip98_verify_event && out.nip98_validate_token === true
}

if (req.nipgs) {
  const lines = req.nipgs.armor.split('\n')
  const env = JSON.parse(Buffer.from(lines[1], 'base64').toString('utf8'))
  const enc = new TextEncoder()
  let prefix = `nostr:git:v1:${env.t}:`
  if (env.oa) prefix += `${env.oa[0]}:${env.oa[1]}:${env.oa[2]}:`
  const payload = Buffer.from(req.nipgs.payload, 'base64')
  const msg = new Uint8Array([...enc.encode(prefix), ...payload])
  const h = sha256(msg)
  const hex = (s) => Uint8Array.from(Buffer.from(s, 'hex'))
  out.nipgs_hash = Buffer.from(h).toString('hex')
  out.nipgs_schnorr = schnorr.verify(hex(env.sig), h, hex(env.pk))
  out.nipgs_pubkey = env.pk
  ok = ok && out.nipgs_schnorr
}

console.log(JSON.stringify(out))
process.exit(ok ? 0 : 1)
