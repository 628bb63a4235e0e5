// Message bodies: markdown (markdown.js) with code blocks labelled and
// copyable, diffs line by line, bare links and nostr: mentions, built
// with text nodes only. Event content is untrusted and never reaches
// innerHTML.

import { el } from './util.js';
import { decode } from './bech32.js';
import { hex } from './sha256.js';
import { parse, render } from './markdown.js';

/** looksLikeDiff reports whether text reads as a unified diff. */
export function looksLikeDiff(text) {
  return /^(diff --git |--- |\+\+\+ |@@ )/m.test(text) && /^[+-]/m.test(text);
}

/** diffBlock renders a unified diff, one line per element, marked by kind. */
export function diffBlock(text) {
  const pre = el('pre', { class: 'diff', tabindex: '0', 'aria-label': 'Diff' });
  for (const line of text.replace(/\n$/, '').split('\n')) {
    let cls = 'ctx';
    if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff ') || line.startsWith('index ')) cls = 'file';
    else if (line.startsWith('@@')) cls = 'hunk';
    else if (line.startsWith('+')) cls = 'add';
    else if (line.startsWith('-')) cls = 'del';
    pre.append(el('span', { class: 'dl ' + cls, text: line + '\n' }));
  }
  return pre;
}

// copyButton copies text to the clipboard and says so.
function copyButton(text, what) {
  const b = el('button', { type: 'button', class: 'copy', 'aria-label': 'Copy ' + what, text: 'Copy' });
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = 'Copied';
    } catch {
      b.textContent = 'Select and copy by hand';
    }
    setTimeout(() => { b.textContent = 'Copy'; }, 2000);
  });
  return b;
}

// codeBlock is a fenced or indented block: its language as a label, a
// copy button, and the code (a diff shown line by line).
function codeBlock(lang, code) {
  const isDiff = lang === 'diff' || lang === 'patch' || (!lang && looksLikeDiff(code));
  let pre;
  if (isDiff) pre = diffBlock(code);
  else {
    pre = el('pre', { class: 'code', tabindex: '0', 'aria-label': lang ? `Code (${lang})` : 'Code' });
    pre.append(el('code', { text: code.replace(/\n$/, '') }));
  }
  return el('div', { class: 'codeblock' },
    el('div', { class: 'code-head' }, el('span', { class: 'lang', text: lang || (isDiff ? 'diff' : 'code') }), copyButton(code, lang ? lang + ' code' : 'code')),
    pre);
}

const bare = /(https?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]])|(nostr:npub1[02-9ac-hj-np-z]{58})|(@[\p{L}\p{N}_.-]+)/gu;
const linkAttrs = { rel: 'noopener noreferrer nofollow', target: '_blank' };

// textNodes turns plain text into nodes: bare links, nostr: mentions and
// @names of people the message tags.
function textNodes(text, ctx, parent) {
  let last = 0;
  for (const m of text.matchAll(bare)) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    const s = m[0];
    if (m[1]) parent.append(el('a', { href: s, ...linkAttrs, text: s }));
    else if (m[2]) {
      let pk = '';
      try { pk = hex(decode(s.slice(6)).bytes); } catch { /* not a key: shown as text */ }
      parent.append(pk ? el('span', { class: 'mention', text: '@' + ctx.name(pk) }) : document.createTextNode(s));
    } else if (m[3]) {
      const known = ctx.mentioned.some((pk) => '@' + ctx.name(pk) === s || s.startsWith('@' + ctx.name(pk)));
      parent.append(known ? el('span', { class: 'mention', text: s }) : document.createTextNode(s));
    }
    last = m.index + s.length;
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}

// entity decodes a named character reference with the browser's own
// table: the input is only ever &name; (letters and digits), parsed into
// an inert document, never into the page.
const entityCache = new Map();
function entity(name) {
  if (!/^[A-Za-z][A-Za-z0-9]{1,31}$/.test(name)) return null;
  if (!entityCache.has(name)) {
    const t = new DOMParser().parseFromString(`<p>&${name};</p>`, 'text/html').body.textContent;
    entityCache.set(name, t === `&${name};` ? null : t);
  }
  return entityCache.get(name);
}

/** body renders message text (markdown) into a fragment. ctx: {name(pk), mentioned: [pk]}; kind 40008 is a diff. */
export function body(text, ctx, kind = 9) {
  if (kind === 40008) {
    const frag = document.createDocumentFragment();
    frag.append(diffBlock(text));
    return frag;
  }
  return render(parse(text, { entity }), document, {
    pre: true,
    linkAttrs,
    text: (s, parent) => textNodes(s, ctx, parent),
    code: codeBlock,
    table: (t) => el('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Table' }, t),
  });
}
