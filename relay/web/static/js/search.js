// The search view: the relay's full-text search (NIP-50, over the HTTP
// bridge) across every channel the person may read, its results grouped
// by channel in the relay's order (best first), each with a snippet whose
// matching words are marked; a result opens the message in its channel
// (and thread). The query language is the relay's: words, "phrases",
// from:@name, in:#channel, has:file, before:/after: dates. Route:
// #/search/<query>. Results come while typing (liveSearchDelay after the
// last key), the box keeping its focus; a word still being typed after
// from:, in:, has:, before: or after: waits for its value. The relay
// checks who may read what; the page only shows what it was given.

import { el, relTime, fullTime } from './util.js';
import { query } from './bridge.js';
import { tag } from './event.js';
import { plain } from './markdown.js';
import { prK, openPR } from './repo.js';

const $ = (id) => document.getElementById(id);
/** searchKinds are what the relay's index holds: messages, forum posts and comments, pull requests' comments. */
export const searchKinds = [9, 40002, 45001, 45003, prK.comment];
/** searchLimit is how many results one search asks for. */
const searchLimit = 100;
/** liveSearchDelay is how long typing pauses before the results follow the box. */
const liveSearchDelay = 250;
/** snippetChars is about how much text a snippet shows around the first match. */
const snippetChars = 160;

/** highlightTerms lists the words and phrases of a query to mark, operators left out. */
export function highlightTerms(q) {
  const out = [];
  const re = /"([^"]*)"?|(\S+)/g;
  let m;
  while ((m = re.exec(q)) !== null) {
    if (m[1] !== undefined) { if (m[1].trim()) out.push(m[1].trim()); continue; }
    if (/^(from|in|has|before|after):./i.test(m[2])) continue;
    out.push(m[2]);
  }
  return out;
}

/**
 * snippet cuts text around the first match of any term and splits it
 * into [{text, hit}] parts, hits being the matched words (case-insensitive).
 */
export function snippet(text, terms, width = snippetChars) {
  const flat = text.replace(/\s+/g, ' ').trim();
  const lower = flat.toLowerCase();
  const ts = terms.map((t) => t.toLowerCase()).filter(Boolean);
  let first = -1;
  for (const t of ts) { const i = lower.indexOf(t); if (i >= 0 && (first < 0 || i < first)) first = i; }
  let start = 0, end = flat.length;
  if (flat.length > width) {
    start = Math.max(0, (first < 0 ? 0 : first) - Math.floor(width / 3));
    end = Math.min(flat.length, start + width);
  }
  const cut = flat.slice(start, end), lc = lower.slice(start, end);
  const parts = [];
  let i = 0;
  while (i < cut.length) {
    let at = -1, len = 0;
    for (const t of ts) { const j = lc.indexOf(t, i); if (j >= 0 && (at < 0 || j < at || (j === at && t.length > len))) { at = j; len = t.length; } }
    if (at < 0) { parts.push({ text: cut.slice(i), hit: false }); break; }
    if (at > i) parts.push({ text: cut.slice(i, at), hit: false });
    parts.push({ text: cut.slice(at, at + len), hit: true });
    i = at + len;
  }
  if (start > 0) parts.unshift({ text: '…', hit: false });
  if (end < flat.length) parts.push({ text: '…', hit: false });
  return parts;
}

/** groupByChannel groups results by their channel, groups in the order of their best result. */
export function groupByChannel(evs) {
  const groups = new Map();
  for (const ev of evs) {
    const ch = tag(ev, 'h') || '';
    if (!groups.has(ch)) groups.set(ch, []);
    groups.get(ch).push(ev);
  }
  return [...groups.entries()].map(([ch, list]) => ({ ch, evs: list }));
}

export class SearchView {
  /** app: {store, signer, reveal}. */
  constructor(app) {
    this.app = app;
    this.q = '';
    this.results = null;
    this.error = '';
    this.typing = 0; // the timer of the live search
    this.section = el('section', { id: 'search-view', class: 'search-view', hidden: true, 'aria-labelledby': 'search-title' });
    $('main').append(this.section);
    // The page-wide search box, in the top bar.
    const form = el('form', { id: 'global-search-form', class: 'global-search', role: 'search' },
      el('input', { type: 'search', id: 'global-search', 'aria-label': 'Search all channels', placeholder: 'Search all channels', title: 'words, "phrases", from:@name, in:#channel, has:file, before:/after:YYYY-MM-DD' }));
    $('status').before(form);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      clearTimeout(this.typing);
      const q = $('global-search').value.trim();
      if (q) location.hash = '#/search/' + encodeURIComponent(q);
    });
    $('global-search').addEventListener('input', () => {
      clearTimeout(this.typing);
      this.typing = setTimeout(() => this.live($('global-search').value.trim()), liveSearchDelay);
    });
  }

  /**
   * live follows the box while typing: the first search opens the view
   * (a history entry, so Back returns), the next ones replace it.
   */
  live(q) {
    if (!q || q === this.q || /(^|\s)(from|in|has|before|after):[@#]?$/i.test(q)) return;
    const hash = '#/search/' + encodeURIComponent(q);
    if (this.section.hidden) { location.hash = hash; return; }
    history.replaceState(null, '', hash);
    this.app.route();
  }

  /** route shows the view for a #/search/<q> fragment; it reports whether it took the route. */
  route(hash) {
    const m = /^#\/search\/(.*)$/.exec(hash);
    if (!m) { this.section.hidden = true; return false; }
    let q = '';
    try { q = decodeURIComponent(m[1]); } catch { q = m[1]; }
    this.section.hidden = false;
    if (q !== this.q) {
      this.q = q;
      if ($('global-search').value.trim() !== q) $('global-search').value = q; // not under the typist's caret
      this.run(q);
    }
    return true;
  }

  async run(q) {
    this.results = null;
    this.error = '';
    this.render();
    try {
      const evs = await query(this.app.signer, [{ kinds: searchKinds, search: q, limit: searchLimit }]);
      if (this.q !== q) return;
      this.results = evs;
    } catch (e) {
      if (this.q !== q) return;
      this.error = e.message;
    }
    this.render();
  }

  /** open shows a result in place: a message in its channel, a pull request's comment on the pull request's page. */
  async open(ev) {
    const s = this.app.store;
    if (ev.kind === prK.comment && tag(ev, 'K') === String(prK.pr)) {
      const id = tag(ev, 'E');
      let pr = s.events.get(id);
      if (!pr) {
        try { [pr] = await query(this.app.signer, [{ ids: [id], kinds: [prK.pr], limit: 1 }]); } catch { pr = null; }
      }
      if (pr) { s.add(pr, true); openPR(pr, this.app); }
      return;
    }
    s.add(ev, true);
    this.app.reveal(ev);
  }

  render() {
    if (this.section.hidden) return;
    const s = this.app.store;
    const head = el('h2', { id: 'search-title', text: `Search: ${this.q}` });
    if (this.error) { this.section.replaceChildren(head, el('p', { class: 'error', role: 'alert', text: 'Search failed: ' + this.error })); return; }
    if (!this.results) { this.section.replaceChildren(head, el('p', { role: 'status', text: 'Searching…' })); return; }
    const n = this.results.length;
    const status = el('p', { class: 'search-count', role: 'status', text: n ? `${n} ${n === 1 ? 'result' : 'results'}` : 'No results. Try fewer words, or drop a from:, in: or date.' });
    const terms = highlightTerms(this.q);
    const groups = groupByChannel(this.results).map(({ ch, evs }) => {
      const c = s.channels.get(ch);
      const name = c ? (c.type === 'dm' ? 'direct message' : '#' + (c.name || ch.slice(0, 8))) : 'outside channels';
      return el('section', { class: 'search-group', 'data-channel': ch },
        el('h3', { text: `${name} (${evs.length})` }),
        el('ul', { class: 'search-results' }, ...evs.map((ev) => el('li', {},
          el('button', {
            type: 'button', class: 'search-hit', 'data-id': ev.id,
            onclick: () => this.open(ev),
          },
          el('span', { class: 'search-who', text: s.authorName(ev) }),
          el('time', { datetime: new Date(ev.created_at * 1000).toISOString(), title: fullTime(ev.created_at), text: relTime(ev.created_at) }),
          el('span', { class: 'search-snippet' }, ...snippet(plain(ev.content), terms).map((p) => (p.hit ? el('mark', { text: p.text }) : p.text))))))));
    });
    this.section.replaceChildren(head, status, ...groups);
  }
}
