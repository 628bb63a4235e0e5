// A channel's history around its messages: day separators, the line
// above the first message that came since the person last read the
// channel, loading older messages as the reader scrolls up (the reading
// position kept), and "Jump to latest".

import { el } from './util.js';

/** loadOlderPx is how near the top of the feed the reader gets before older messages are asked for. */
export const loadOlderPx = 600;

/** dayKey is the local calendar day of a unix time. */
export function dayKey(ts) {
  const d = new Date(ts * 1000);
  return `${d.getFullYear()}-${d.getMonth() + 1}-${d.getDate()}`;
}

/** dayLabel names a day: Today, Yesterday, or its date. */
export function dayLabel(ts, now = Date.now()) {
  const key = dayKey(ts);
  if (key === dayKey(now / 1000)) return 'Today';
  if (key === dayKey(now / 1000 - 86400)) return 'Yesterday';
  return new Date(ts * 1000).toLocaleDateString(undefined, { weekday: 'long', year: 'numeric', month: 'long', day: 'numeric' });
}

/**
 * rows lays out evs (oldest first) with a day separator where the day
 * changes and a "New" line before newID: [{key, ev} | {key, make()}].
 */
export function rows(evs, { days = false, newID = '' } = {}) {
  const out = [];
  let day = '';
  for (const ev of evs) {
    if (days) {
      const k = dayKey(ev.created_at);
      if (k !== day) {
        day = k;
        const label = dayLabel(ev.created_at);
        out.push({ key: 'day:' + k + ':' + label, make: () => el('div', { class: 'day-sep', 'aria-hidden': 'true' }, el('span', { text: label })) });
      }
    }
    if (ev.id === newID) out.push({ key: 'new:' + ev.id, make: () => el('div', { class: 'new-sep', 'aria-hidden': 'true' }, el('span', { text: 'New' })) });
    out.push({ key: ev.id, ev });
  }
  return out;
}

/** firstNew returns the id of the first message of evs read after marker {t, ids} that counted(ev) counts, or ''. */
export function firstNew(evs, marker, counted) {
  if (!marker || !marker.t) return '';
  for (const ev of evs) {
    if (!counted(ev)) continue;
    if (ev.created_at > marker.t || (ev.created_at === marker.t && !marker.ids.includes(ev.id))) return ev.id;
  }
  return '';
}

/**
 * anchor remembers where the first message in view sits, to put it back
 * after the feed changes. Separators do not anchor: a day's separator
 * moves up when older messages of that day come.
 */
export function anchor(container) {
  const top = container.getBoundingClientRect().top;
  for (const c of container.children) {
    if (c.tagName !== 'ARTICLE') continue;
    const r = c.getBoundingClientRect();
    if (r.bottom > top) return { el: c, id: c.dataset.id, at: r.top };
  }
  return null;
}

/**
 * restore scrolls so that the anchored message is where it was. The
 * render that moved it may also have rebuilt it (its relative time moved
 * on): then its new element, found by id, stands in.
 */
export function restore(container, a) {
  if (!a) return;
  const m = a.el.isConnected ? a.el : a.id && container.querySelector(`:scope > article[data-id="${CSS.escape(a.id)}"]`);
  if (!m) return;
  const d = m.getBoundingClientRect().top - a.at;
  if (d) container.scrollTop += d;
}

/** JumpToLatest is the button that shows while the reader is far from the newest message. */
export class JumpToLatest {
  constructor(feed) {
    this.feed = feed;
    this.button = el('button', { type: 'button', class: 'jump-latest', hidden: true, text: 'Jump to latest ↓', onclick: () => { feed.scrollTop = feed.scrollHeight; this.update(); } });
    feed.parentNode.insertBefore(this.button, feed.nextSibling);
    feed.addEventListener('scroll', () => this.update(), { passive: true });
  }

  update() {
    const far = this.feed.scrollHeight - this.feed.scrollTop - this.feed.clientHeight > this.feed.clientHeight;
    if (this.button.hidden === far) this.button.hidden = !far;
  }
}
