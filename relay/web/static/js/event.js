// Nostr events (NIP-01): serialisation, id, signing and checking. Pure
// functions; the relay connection lives in relay.js.

import { sha256, utf8, hex, unhex } from './sha256.js';
import { sign, verify, publicKey } from './schnorr.js';

/** serialize is NIP-01's [0,pubkey,created_at,kind,tags,content] in JSON.stringify's escaping, which NIP-01 specifies. */
export function serialize(ev) {
  return JSON.stringify([0, ev.pubkey, ev.created_at, ev.kind, ev.tags, ev.content]);
}

/** eventID returns the hex sha256 of the serialised event. */
export function eventID(ev) { return hex(sha256(utf8(serialize(ev)))); }

/** finalize fills pubkey, created_at (if unset), id and sig of a template with a secret key. */
export function finalize(tpl, sk) {
  const ev = {
    kind: tpl.kind,
    created_at: tpl.created_at ?? Math.floor(Date.now() / 1000),
    tags: tpl.tags ?? [],
    content: tpl.content ?? '',
    pubkey: hex(publicKey(sk)),
  };
  ev.id = eventID(ev);
  ev.sig = hex(sign(unhex(ev.id), sk));
  return ev;
}

const isHex = (s, n) => typeof s === 'string' && s.length === n && /^[0-9a-f]*$/.test(s);

/** wellFormed reports whether a value from the wire has an event's shape. */
export function wellFormed(ev) {
  return ev !== null && typeof ev === 'object' && isHex(ev.id, 64) && isHex(ev.pubkey, 64) && isHex(ev.sig, 128) &&
    Number.isInteger(ev.kind) && Number.isInteger(ev.created_at) && typeof ev.content === 'string' &&
    Array.isArray(ev.tags) && ev.tags.every((t) => Array.isArray(t) && t.every((v) => typeof v === 'string'));
}

/** verifyEvent checks shape, id and signature. */
export function verifyEvent(ev) {
  if (!wellFormed(ev)) return false;
  if (eventID(ev) !== ev.id) return false;
  return verify(unhex(ev.sig), unhex(ev.id), unhex(ev.pubkey));
}

/** tag returns the first value of the first tag named name, or undefined. */
export function tag(ev, name) {
  const t = ev.tags.find((t) => t[0] === name && t.length > 1);
  return t ? t[1] : undefined;
}

/** tags returns every value of tags named name. */
export function tags(ev, name) {
  return ev.tags.filter((t) => t[0] === name && t.length > 1).map((t) => t[1]);
}

/** threadOf returns {root, reply} from the e tags with NIP-10 markers. */
export function threadOf(ev) {
  let root = '', reply = '';
  for (const t of ev.tags) {
    if (t[0] !== 'e' || t.length < 2) continue;
    if (t[3] === 'root' && !root) root = t[1];
    if (t[3] === 'reply' && !reply) reply = t[1];
  }
  if (!root && reply) root = reply;
  return { root, reply };
}

/** channelTag is [['h', id]] for an event of channel id, [] for one outside channels. */
export function channelTag(ev) {
  const h = ev.tags.find((t) => t[0] === 'h');
  return h ? [['h', h[1]]] : [];
}

/** threadTags are the e tags of a reply to parent, as the buzz CLI builds them. */
export function threadTags(parent) {
  const { root } = threadOf(parent);
  if (!root || root === parent.id) return [['e', parent.id, '', 'reply']];
  return [['e', root, '', 'root'], ['e', parent.id, '', 'reply']];
}

/**
 * attestedOwner returns the owner that an NIP-OA `auth` tag on ev vouches
 * for (["auth", owner, conditions, sig]: the owner's BIP-340 signature of
 * sha256("nostr:agent-auth:" + agent + ":" + conditions)), or '' when ev
 * has none that verifies. Conditions are not applied here.
 */
export function attestedOwner(ev) {
  for (const t of ev.tags) {
    if (t[0] !== 'auth' || t.length !== 4) continue;
    const [, owner, cond, sig] = t;
    if (!/^[0-9a-f]{64}$/.test(owner) || !/^[0-9a-f]{128}$/.test(sig) || owner === ev.pubkey) continue;
    if (verify(unhex(sig), sha256(utf8('nostr:agent-auth:' + ev.pubkey + ':' + cond)), unhex(owner))) return owner;
  }
  return '';
}
