// Files in messages. Uploads go to the relay's Blossom routes (PUT
// /upload with a kind 24242 authorization naming the file's hash and the
// channel), with a progress bar; a message carries each file in a NIP-92
// imeta tag and its URL in the text. Shown in a message: images as the
// relay's thumbnail, opening a lightbox; other files as cards with name,
// size and type. Blobs are fetched from this origin by hash only (never
// from a URL a message names) with an authorization, since a private
// channel's files are served only to its members, and shown from blob:
// URLs.

import { el } from './util.js';
import { sha256, hex, utf8 } from './sha256.js';

const kindMediaAuth = 24242;
// uploadAuthSeconds is how long an upload authorization holds: a 50 MB
// upload on a slow link; getAuthSeconds how long the one read
// authorization this page signs for the relay is used before another.
const uploadAuthSeconds = 600, getAuthSeconds = 3600;
// thumbSide is the largest side of an inline image, in CSS pixels (the
// relay's thumbnails are at most this big).
const thumbSide = 320;

const hashRE = /^[0-9a-f]{64}$/;

function header(ev) {
  let bin = '';
  for (const b of utf8(JSON.stringify(ev))) bin += String.fromCharCode(b);
  return 'Nostr ' + btoa(bin);
}

/** mediaAuth signs a kind 24242 authorization (BUD-01) for verb with tags. */
export async function mediaAuth(signer, verb, tags, content, seconds = uploadAuthSeconds) {
  const expiration = String(Math.floor(Date.now() / 1000) + seconds);
  return header(await signer.sign({ kind: kindMediaAuth, content, tags: [['t', verb], ...tags, ['expiration', expiration]] }));
}

async function digest(buf) {
  if (globalThis.crypto?.subtle) return hex(new Uint8Array(await crypto.subtle.digest('SHA-256', buf)));
  return hex(sha256(new Uint8Array(buf)));
}

/** size says a byte count in words. */
export function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${Math.round(n / 1024)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * upload sends file to the relay for channel (empty: the whole relay),
 * calling onProgress(fraction) as it goes, and resolves to the relay's
 * blob descriptor; it rejects with the relay's reason (a size limit, a
 * channel the person is not in).
 */
export async function upload(signer, file, channel, onProgress = () => {}) {
  const buf = await file.arrayBuffer();
  const hash = await digest(buf);
  const tags = [['x', hash]];
  if (channel) tags.push(['h', channel]);
  const auth = await mediaAuth(signer, 'upload', tags, 'Upload ' + file.name);
  // BUD-06's preflight: a file the relay would refuse (too big, a channel
  // the person is not in) is not sent at all, and the reason is the relay's.
  const pre = await fetch('/upload', { method: 'HEAD', headers: { Authorization: auth, 'X-Content-Length': String(file.size), 'X-SHA-256': hash } });
  if (!pre.ok) throw new Error(pre.headers.get('X-Reason') || `HTTP ${pre.status}`);
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', '/upload');
    xhr.setRequestHeader('Authorization', auth);
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) onProgress(e.loaded / e.total); };
    xhr.onload = () => {
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch { /* the reason header says it */ }
      if (xhr.status !== 200) { reject(new Error(body.message || xhr.getResponseHeader('X-Reason') || `HTTP ${xhr.status}`)); return; }
      if (body.sha256 !== hash) { reject(new Error('the relay stored something else')); return; }
      resolve(body);
    };
    xhr.onerror = () => reject(new Error('the upload was cut off (is the relay reachable?)'));
    xhr.send(file);
  });
}

/** imetaTag is the NIP-92 tag for an uploaded file named name. */
export function imetaTag(d, name) {
  const t = ['imeta', 'url ' + d.url, 'm ' + d.type, 'x ' + d.sha256, 'size ' + d.size];
  if (d.dim) t.push('dim ' + d.dim);
  if (d.thumb) t.push('thumb ' + d.thumb);
  if (name) t.push('alt ' + name);
  return t;
}

/** attachments reads the files of ev's imeta tags: [{url, m, x, size, dim, thumb, alt}]. */
export function attachments(ev) {
  const out = [];
  for (const t of ev.tags) {
    if (t[0] !== 'imeta') continue;
    const f = {};
    for (const part of t.slice(1)) {
      const i = part.indexOf(' ');
      if (i > 0 && !(part.slice(0, i) in f)) f[part.slice(0, i)] = part.slice(i + 1);
    }
    if (f.x) f.x = f.x.toLowerCase();
    if (hashRE.test(f.x || '')) out.push(f);
  }
  return out;
}

/** withoutURLs drops the lines of text that only name one of files' URLs. */
export function withoutURLs(text, files) {
  const urls = new Set(files.map((f) => f.url));
  return text.split('\n').filter((l) => !urls.has(l.trim())).join('\n').trim();
}

// The read authorization (a server tag naming this origin) and the blob:
// URLs made, by path.
let readAuth = null;
const fetched = new Map();

async function getHeader(signer, hash) {
  if (hash) return mediaAuth(signer, 'get', [['x', hash]], 'Get a file', uploadAuthSeconds);
  const now = Date.now() / 1000;
  if (!readAuth || readAuth.signer !== signer || readAuth.until < now + 60) {
    readAuth = { signer, until: now + getAuthSeconds, value: mediaAuth(signer, 'get', [['server', location.origin]], 'Read files on ' + location.host, getAuthSeconds) };
  }
  return readAuth.value;
}

/** fetchBlob fetches path (/<hash> or /thumb/<hash>) of this origin and resolves to a blob: URL. */
export function fetchBlob(signer, path, hash) {
  if (!fetched.has(path)) {
    const p = (async () => {
      let res = await fetch(path, { headers: { Authorization: await getHeader(signer) } });
      if (res.status === 401) res = await fetch(path, { headers: { Authorization: await getHeader(signer, hash) } });
      if (!res.ok) {
        let msg = res.headers.get('X-Reason') || `HTTP ${res.status}`;
        throw new Error(msg);
      }
      return URL.createObjectURL(await res.blob());
    })();
    p.catch(() => fetched.delete(path));
    fetched.set(path, p);
  }
  return fetched.get(path);
}

// asBlobURL lets an image load only what fetchBlob made: a blob: URL of
// this page, never an address a message named.
function asBlobURL(u) {
  if (!String(u).startsWith('blob:')) throw new Error('not a blob: URL');
  return u;
}

function fitted(dim) {
  const m = /^(\d+)x(\d+)$/.exec(dim || '');
  if (!m) return {};
  const w = Number(m[1]), h = Number(m[2]);
  const s = Math.min(1, thumbSide / Math.max(w, h, 1));
  return { width: String(Math.max(1, Math.round(w * s))), height: String(Math.max(1, Math.round(h * s))) };
}

function fileName(f) { return f.alt || f.x.slice(0, 12) + '…'; }

function extOf(name) {
  const m = /\.([a-z0-9]{1,4})$/i.exec(name);
  return m ? m[1].toUpperCase() : 'FILE';
}

async function download(signer, f) {
  const url = await fetchBlob(signer, '/' + f.x, f.x);
  const a = el('a', { href: url, download: fileName(f) });
  document.body.append(a);
  a.click();
  a.remove();
}

function card(signer, f) {
  const err = el('span', { class: 'file-error', role: 'status' });
  const btn = el('button', {
    type: 'button', class: 'link', text: 'Download', 'aria-label': 'Download ' + fileName(f),
    onclick: () => download(signer, f).catch((e) => { err.textContent = 'Not downloaded: ' + e.message; }),
  });
  return el('div', { class: 'file-card', role: 'group', 'aria-label': 'File ' + fileName(f) },
    el('span', { class: 'file-icon', 'aria-hidden': 'true', text: extOf(fileName(f)) }),
    el('span', { class: 'file-name', text: fileName(f) }),
    el('span', { class: 'file-meta', text: [f.size ? size(Number(f.size)) : '', (f.m || '').split(';')[0]].filter(Boolean).join(' · ') }),
    btn, err);
}

/** lightbox shows the full image of f in a modal dialog; Escape or the button closes it. */
export function lightbox(signer, f) {
  const img = el('img', { class: 'lightbox-image', alt: fileName(f) });
  const status = el('p', { class: 'hint', role: 'status', text: 'Loading…' });
  const close = el('button', { type: 'button', class: 'lightbox-close', 'aria-label': 'Close image', text: '✕' });
  const dlg = el('dialog', { class: 'lightbox', 'aria-label': fileName(f) }, close, img, status);
  close.addEventListener('click', () => dlg.close());
  dlg.addEventListener('click', (e) => { if (e.target === dlg) dlg.close(); });
  dlg.addEventListener('close', () => dlg.remove());
  document.body.append(dlg);
  dlg.showModal();
  fetchBlob(signer, '/' + f.x, f.x).then((u) => { img.src = asBlobURL(u); status.textContent = ''; }, (e) => { status.textContent = 'Cannot show the image: ' + e.message; });
  return dlg;
}

/** attachmentsView shows files: images inline (the thumbnail), the rest as cards. */
export function attachmentsView(files, signer) {
  const box = el('div', { class: 'attachments' });
  for (const f of files) {
    if (!(f.m || '').startsWith('image/') || !f.thumb || !signer) {
      box.append(card(signer, f));
      continue;
    }
    const img = el('img', { class: 'attachment-thumb', alt: fileName(f), ...fitted(f.dim) });
    const open = el('button', { type: 'button', class: 'attachment-image', 'aria-label': 'Open image ' + fileName(f), onclick: () => lightbox(signer, f) }, img);
    fetchBlob(signer, '/thumb/' + f.x, f.x).then((u) => { img.src = asBlobURL(u); }, () => open.replaceWith(card(signer, f)));
    box.append(open);
  }
  return box;
}

/**
 * attacher is the composer's file picker: a button, paste and drop on
 * target, and the list of files being uploaded with their progress.
 * signer() and channel() say for whom and where; onChange() runs when the
 * list changes.
 */
export function attacher({ signer, channel, onChange = () => {} }) {
  const input = el('input', { type: 'file', multiple: true, hidden: true, tabindex: '-1', 'aria-hidden': 'true', class: 'file-input' });
  const button = el('button', { type: 'button', class: 'attach', 'aria-label': 'Attach files', title: 'Attach files (or paste, or drop them here)', text: 'Attach', onclick: () => input.click() });
  const list = el('ul', { class: 'pending-files', 'aria-label': 'Files to send', hidden: true });
  let items = [];

  const refresh = () => { list.hidden = items.length === 0; onChange(); };
  const add = (file) => {
    const bar = el('progress', { max: '1', value: '0', 'aria-label': 'Uploading ' + file.name });
    const status = el('span', { class: 'pending-status', role: 'status' });
    const item = { file };
    const remove = el('button', { type: 'button', class: 'link', 'aria-label': 'Remove ' + file.name, text: '✕', onclick: () => { items = items.filter((x) => x !== item); item.li.remove(); refresh(); } });
    item.li = el('li', { class: 'pending-file' }, el('span', { class: 'pending-name', text: file.name }), el('span', { class: 'pending-size', text: size(file.size) }), bar, status, remove);
    item.done = upload(signer(), file, channel(), (x) => { bar.value = String(x); }).then((d) => {
      bar.value = '1';
      item.li.classList.add('done');
      status.textContent = 'uploaded';
      return d;
    }, (e) => {
      item.li.classList.add('failed');
      status.textContent = 'Not uploaded: ' + e.message;
      throw e;
    });
    item.done.catch(() => {});
    items.push(item);
    list.append(item.li);
    refresh();
  };
  const addAll = (files) => { for (const f of files) add(f); };
  input.addEventListener('change', () => { addAll([...input.files]); input.value = ''; });

  return {
    button, input, list,
    /** bind takes pasted files on area and dropped files on zone. */
    bind(area, zone) {
      area.addEventListener('paste', (e) => {
        const files = [...(e.clipboardData?.files || [])];
        if (files.length) { e.preventDefault(); addAll(files); }
      });
      zone.addEventListener('dragover', (e) => {
        if ([...(e.dataTransfer?.types || [])].includes('Files')) { e.preventDefault(); zone.classList.add('dropping'); }
      });
      zone.addEventListener('dragleave', () => zone.classList.remove('dropping'));
      zone.addEventListener('drop', (e) => {
        zone.classList.remove('dropping');
        const files = [...(e.dataTransfer?.files || [])];
        if (files.length) { e.preventDefault(); addAll(files); }
      });
    },
    add: addAll,
    has: () => items.length > 0,
    /** take waits for the uploads and returns the message's tags and URLs; it rejects when one failed. */
    async take() {
      const ds = await Promise.all(items.map((i) => i.done.then((d) => [d, i.file.name])));
      return { tags: ds.map(([d, name]) => imetaTag(d, name)), urls: ds.map(([d]) => d.url) };
    },
    clear() { items = []; list.replaceChildren(); refresh(); },
  };
}
