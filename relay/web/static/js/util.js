// Small helpers shared by the views: element building with textContent,
// relative times, names and initials.

/** el makes an element with attributes and children (strings become text nodes, never HTML). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

/** clone returns the first element of a <template> by id. */
export function clone(id) {
  return document.getElementById(id).content.firstElementChild.cloneNode(true);
}

/** part finds a [data-part] inside a cloned template. */
export function part(root, name) { return root.querySelector(`[data-part="${name}"]`); }

const units = [['year', 31536000], ['month', 2592000], ['week', 604800], ['day', 86400], ['hour', 3600], ['minute', 60]];

/** relTime says how long ago a unix time was, in words. */
export function relTime(ts, now = Date.now() / 1000) {
  const d = Math.round(now - ts);
  if (d < 45) return 'just now';
  for (const [name, secs] of units) {
    if (d >= secs) { const n = Math.floor(d / secs); return `${n} ${name}${n === 1 ? '' : 's'} ago`; }
  }
  return 'just now';
}

/** fullTime is the absolute local time, for tooltips. */
export function fullTime(ts) { return new Date(ts * 1000).toLocaleString(); }

/** initials makes one or two letters from a name. */
export function initials(name) {
  const words = name.replace(/[^\p{L}\p{N}\s]/gu, ' ').trim().split(/\s+/).filter(Boolean);
  if (words.length === 0) return '?';
  const first = [...words[0]][0] || '?';
  const second = words.length > 1 ? [...words[1]][0] : ([...words[0]][1] || '');
  return (first + second).toUpperCase();
}

/** hue picks one of eight avatar colours from a pubkey. */
export function hue(pubkey) { return parseInt(pubkey.slice(0, 2), 16) % 8; }

/** shortKey abbreviates a hex key for display. */
export function shortKey(pk) { return pk.slice(0, 8) + '…' + pk.slice(-4); }

/** uuid4 makes a random lower-case UUID (crypto.randomUUID needs a secure context). */
export function uuid4() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** typingLine says who is typing: "Ana is typing…", "Ana and Bo are typing…", "Several people are typing…". */
export function typingLine(names) {
  if (names.length === 0) return '';
  if (names.length === 1) return `${names[0]} is typing…`;
  if (names.length <= 3) return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]} are typing…`;
  return 'Several people are typing…';
}
