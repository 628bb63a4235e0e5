// Runs the page's markdown module (static/js/markdown.js) under node on
// the documents the Go test gives on stdin, building into a tiny DOM
// that serializes the way the CommonMark spec writes its HTML, and prints
// {html: [string], ms: [number]} on stdout.
// Input: {dir, docs: [string], entities: {name: text}, page: bool}
// (page: render as the page does, breaks and image links, else as the
// spec does).
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const input = JSON.parse(await new Promise((resolve) => {
  let s = '';
  process.stdin.on('data', (d) => { s += d; });
  process.stdin.on('end', () => resolve(s));
}));
const { parse, render } = await import(pathToFileURL(path.join(input.dir, 'markdown.js')).href);

class Node {
  constructor(tag) { this.tag = tag; this.attrs = []; this.kids = []; this.data = ''; }
  setAttribute(k, v) { const a = this.attrs.find((x) => x[0] === k); if (a) a[1] = String(v); else this.attrs.push([k, String(v)]); }
  append(...ns) { for (const n of ns) { if (n.tag === '#fragment') this.kids.push(...n.kids); else this.kids.push(n); } }
  get lastChild() { return this.kids[this.kids.length - 1] || null; }
}
const doc = {
  createElement: (t) => new Node(t),
  createTextNode: (s) => { const n = new Node('#text'); n.data = s; return n; },
  createDocumentFragment: () => new Node('#fragment'),
};

const esc = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const blockTags = new Set(['p', 'blockquote', 'ul', 'ol', 'li', 'pre', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'div']);
const openNL = new Set(['blockquote', 'ul', 'ol', 'table', 'thead', 'tbody', 'tr']);
const voids = new Set(['hr', 'br', 'img']);

function serialize(root) {
  let out = '';
  const cr = () => { if (out.length && out[out.length - 1] !== '\n') out += '\n'; };
  const walk = (n) => {
    if (n.tag === '#text') { out += esc(n.data); return; }
    if (n.tag === '#fragment') { n.kids.forEach(walk); return; }
    const block = blockTags.has(n.tag);
    if (block) cr();
    const attrs = n.attrs.map(([k, v]) => ` ${k}="${esc(v)}"`).join('');
    if (voids.has(n.tag)) { out += `<${n.tag}${attrs} />`; if (block) cr(); return; }
    out += `<${n.tag}${attrs}>`;
    if (openNL.has(n.tag)) cr();
    n.kids.forEach(walk);
    if (openNL.has(n.tag)) cr();
    out += `</${n.tag}>`;
    if (block) cr();
  };
  walk(root);
  return out;
}

const entity = (name) => (Object.hasOwn(input.entities || {}, name) ? input.entities[name] : null);
const out = { html: [], ms: [] };
for (const d of input.docs) {
  const t0 = performance.now();
  const tree = parse(d, { entity });
  const frag = render(tree, doc, input.page ? { breaks: true } : { images: 'img' });
  out.ms.push(performance.now() - t0);
  out.html.push(serialize(frag));
}
process.stdout.write(JSON.stringify(out));
