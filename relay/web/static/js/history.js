// A channel's history around its messages: day separators, the line
// above the first message that came since the person last read the
// channel, the window of messages the feed shows (sliding as the reader
// scrolls, older pages asked for at its top, the reading position kept),
// and "Jump to latest".

import { el } from './util.js';

/** nearEdgePx is how near either end of the feed the reader gets before the window moves that way (or older messages are asked for). */
export const nearEdgePx = 600;

/** windowStep is how many messages the feed shows at first, and how far the window moves each time the reader nears one of its ends. */
export const windowStep = 150;

/**
 * windowMax bounds the messages in the feed: three steps, the one the
 * reader is in and one either side, so a scroll either way has a page to
 * read before the next comes. A message is about 34 DOM nodes; a feed
 * that kept all it was scrolled through held 340 000 nodes (545 MB) after
 * 10 000 messages, and laid out more with every page.
 */
export const windowMax = 3 * windowStep;

/**
 * FeedWindow is the run of a channel's messages (oldest first) the feed
 * shows: the size messages up to its last, named by id so that older
 * pages coming above and live messages coming below leave it in place;
 * no last follows the newest. It holds no DOM: each render asks it which
 * slice of the channel's messages to show.
 */
export class FeedWindow {
  constructor() { this.reset(); }

  /** reset shows the newest windowStep messages and follows new ones. */
  reset() {
    this.size = windowStep;
    this.last = '';
    this.lastAt = 0;
  }

  /** latest says whether the window ends at the newest message. */
  get latest() { return !this.last; }

  /** bounds returns [start, end) of the window in evs; start may be below 0 while an older page is on its way. */
  bounds(evs) {
    const end = this.end(evs);
    return [end - this.size, end];
  }

  /** slice returns the messages of evs the feed shows. */
  slice(evs) {
    const [start, end] = this.bounds(evs);
    return evs.slice(Math.max(0, start), end);
  }

  /** end finds where the window ends in evs: after its last message, or, if that was deleted, after the messages no newer than it. */
  end(evs) {
    if (!this.last) return evs.length;
    const i = evs.findIndex((e) => e.id === this.last);
    if (i >= 0) return i + 1;
    const after = evs.findIndex((e) => e.created_at > this.lastAt);
    return after < 0 ? evs.length : after;
  }

  /** set makes the window [start, end) of evs; an end at the newest follows new messages. */
  set(evs, start, end) {
    end = Math.max(Math.min(1, evs.length), Math.min(end, evs.length)); // never empty while there are messages
    this.size = end - start;
    this.last = end === evs.length ? '' : evs[end - 1].id;
    this.lastAt = this.last ? evs[end - 1].created_at : 0;
  }

  /**
   * older moves the window's top windowStep up, its bottom following to
   * keep it within windowMax, and says whether it moved. Past the oldest
   * message held it moves only for a page asked of the relay (beyond):
   * that page shows as it comes.
   */
  older(evs, beyond = false) {
    const [start, end] = this.bounds(evs);
    const top = Math.max(0, start);
    if (top === 0 && !beyond) return false;
    const from = beyond ? top - windowStep : Math.max(0, top - windowStep);
    this.set(evs, from, Math.min(end, from + windowMax));
    return true;
  }

  /** newer moves the window's bottom windowStep down, its top following to keep it within windowMax, and says whether it moved. */
  newer(evs) {
    const [start, end] = this.bounds(evs);
    if (end >= evs.length) return false;
    const to = Math.min(evs.length, end + windowStep);
    this.set(evs, Math.max(start, to - windowMax), to);
    return true;
  }

  /** reach widens the window up to index i of evs (the first new message less a margin), moving its bottom up if it must. */
  reach(evs, i) {
    const [start, end] = this.bounds(evs);
    if (i >= start) return;
    const from = Math.max(0, i);
    this.set(evs, from, Math.min(end, from + windowMax));
  }

  /** around puts index i of evs a step below the window's top: a message brought into view from elsewhere (a notification, a search). */
  around(evs, i) {
    const [start, end] = this.bounds(evs);
    if (i >= Math.max(0, start) && i < end) return;
    const from = Math.max(0, i - windowStep);
    this.set(evs, from, Math.min(evs.length, from + windowMax));
  }
}

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

/**
 * JumpToLatest is the button that shows while the reader is far from the
 * newest message. behind() says the feed does not reach the newest at all
 * (its window slid up); latest() brings it back before the jump.
 */
export class JumpToLatest {
  constructor(feed, { behind = () => false, latest = () => {} } = {}) {
    this.feed = feed;
    this.behind = behind;
    this.latest = latest;
    this.button = el('button', { type: 'button', class: 'jump-latest', hidden: true, text: 'Jump to latest ↓', onclick: () => this.go() });
    feed.parentNode.insertBefore(this.button, feed.nextSibling);
    feed.addEventListener('scroll', () => this.update(), { passive: true });
  }

  /** go shows the newest messages, at the bottom of the feed. */
  go() {
    this.latest();
    this.feed.scrollTop = this.feed.scrollHeight;
    this.update();
  }

  update() {
    const far = this.behind() || this.feed.scrollHeight - this.feed.scrollTop - this.feed.clientHeight > this.feed.clientHeight;
    if (this.button.hidden === far) this.button.hidden = !far;
  }
}
