// Message bodies: fenced code blocks, diffs, inline code, links and
// nostr: mentions, built with text nodes only. Event content is untrusted
// and never reaches innerHTML.

import { el } from './util.js';
import { decode } from './bech32.js';
import { hex } from './sha256.js';

const fence = /^```([\w+-]*)[ \t]*\n([\s\S]*?)\n?```[ \t]*$/gm;

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

function codeBlock(lang, code) {
  if (lang === 'diff' || lang === 'patch' || (!lang && looksLikeDiff(code))) return diffBlock(code);
  const pre = el('pre', { class: 'code', tabindex: '0', 'aria-label': lang ? `Code (${lang})` : 'Code' });
  pre.append(el('code', { text: code }));
  return pre;
}

const inline = /(`[^`\n]+`)|(https?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]])|(nostr:npub1[02-9ac-hj-np-z]{58})|(@[\p{L}\p{N}_.-]+)/gu;

function inlineNodes(text, ctx) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(inline)) {
    if (m.index > last) out.push(document.createTextNode(text.slice(last, m.index)));
    const s = m[0];
    if (m[1]) out.push(el('code', { text: s.slice(1, -1) }));
    else if (m[2]) out.push(el('a', { href: s, rel: 'noopener noreferrer nofollow', target: '_blank', text: s }));
    else if (m[3]) {
      let pk = '';
      try { pk = hex(decode(s.slice(6)).bytes); } catch { /* not a key: shown as text */ }
      out.push(pk ? el('span', { class: 'mention', text: '@' + ctx.name(pk) }) : document.createTextNode(s));
    } else if (m[4]) {
      const known = ctx.mentioned.some((pk) => '@' + ctx.name(pk) === s || s.startsWith('@' + ctx.name(pk)));
      out.push(known ? el('span', { class: 'mention', text: s }) : document.createTextNode(s));
    }
    last = m.index + s.length;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}

/** body renders message text into a fragment. ctx: {name(pk), mentioned: [pk]}; kind 40008 is a diff. */
export function body(text, ctx, kind = 9) {
  const frag = document.createDocumentFragment();
  if (kind === 40008) { frag.append(diffBlock(text)); return frag; }
  let last = 0;
  const para = (s) => {
    if (!s.trim()) return;
    frag.append(el('p', {}, inlineNodes(s.replace(/^\n+|\n+$/g, ''), ctx)));
  };
  for (const m of text.matchAll(fence)) {
    para(text.slice(last, m.index));
    frag.append(codeBlock(m[1], m[2]));
    last = m.index + m[0].length;
  }
  para(text.slice(last));
  return frag;
}
