// What calls the person back while they look elsewhere: the count of
// unread mentions in the tab title ("(3) general · buzz") and as a badge
// on the favicon (drawn on a canvas and set as a data: URL, which the
// page's CSP allows for images), and browser notifications while the tab
// is hidden: for mentions, replies in threads the person wrote in and
// direct messages, or for every message of a channel set to "all"; a
// muted channel notifies of nothing. Permission is asked for only when
// the person presses "Turn on notifications" (a user gesture), never on
// load. Clicking a notification opens its message.

import { threadOf, tag } from './event.js';

/** iconPx is the favicon's drawn size: browsers scale it to 16 or 32. */
const iconPx = 64;
/** bodyChars bounds the text a notification shows of a message. */
const bodyChars = 180;

/** titleWith is the tab title for base with n unread mentions. */
export function titleWith(base, n) { return n > 0 ? `(${n > 99 ? '99+' : n}) ${base}` : base; }

/**
 * notifyReason says why ev should notify the person, or '' when it
 * should not: 'dm', 'mention', 'thread' (a reply in a thread they wrote
 * in) or 'all'. ctx: {me, level ('all', 'mentions' or 'mute'), dm (the
 * channel is a direct-message one), wroteIn(root) → whether the person
 * wrote in that thread}.
 */
export function notifyReason(ev, { me, level, dm, wroteIn }) {
  if (ev.pubkey === me || level === 'mute') return '';
  if (dm) return 'dm';
  if (ev.tags.some((t) => t[0] === 'p' && t[1] === me)) return 'mention';
  const { root } = threadOf(ev);
  if (root && wroteIn(root)) return 'thread';
  return level === 'all' ? 'all' : '';
}

/** drawIcon returns the favicon as a data: URL: the page's mark, with a red badge holding n when n > 0. */
export function drawIcon(n, doc = document) {
  const c = doc.createElement('canvas');
  c.width = c.height = iconPx;
  const g = c.getContext('2d');
  if (!g) return 'data:,';
  g.fillStyle = '#0b5cad';
  g.beginPath();
  g.roundRect(4, 4, 56, 56, 12);
  g.fill();
  g.fillStyle = '#ffffff';
  g.font = 'bold 40px sans-serif';
  g.textAlign = 'center';
  g.textBaseline = 'middle';
  g.fillText('b', 30, 34);
  if (n > 0) {
    g.fillStyle = '#d50000';
    g.beginPath();
    g.arc(46, 18, 18, 0, 2 * Math.PI);
    g.fill();
    g.fillStyle = '#ffffff';
    g.font = `bold ${n > 9 ? 20 : 26}px sans-serif`;
    g.fillText(n > 9 ? '9+' : String(n), 46, 19);
  }
  return c.toDataURL('image/png');
}

export class Alerts {
  /** app: {store, reads, prefs, me, reading(), reveal(ev)}. */
  constructor(app) {
    this.app = app;
    this.base = 'buzz';
    this.drawn = -1; // the count on the favicon now
    this.button = document.getElementById('notify-on');
    this.button?.addEventListener('click', () => this.ask());
  }

  /** total is the count of unread mentions over every channel the person belongs to. */
  total() {
    let n = 0;
    for (const ch of this.app.store.channels.keys()) if (ch !== this.app.reading()) n += this.app.reads.mentions(ch);
    return n;
  }

  /** render brings the title, the favicon and the "Turn on notifications" control up to date. */
  render(base = this.base) {
    this.base = base;
    const n = this.total();
    const title = titleWith(base, n);
    if (document.title !== title) document.title = title;
    if (n !== this.drawn) {
      this.drawn = n;
      const link = document.querySelector('link[rel=icon]');
      if (link) { link.href = drawIcon(n); link.dataset.count = String(n); }
    }
    if (this.button) this.button.hidden = !('Notification' in window) || Notification.permission !== 'default';
  }

  /** ask requests permission to notify; called only from the person's click. */
  async ask() {
    if (!('Notification' in window)) return;
    try { await Notification.requestPermission(); } catch { /* refused or unsupported: the control stays */ }
    this.render();
  }

  /** wroteIn reports whether the person wrote the root of thread root, or a reply in it. */
  wroteIn(ch, root) {
    const s = this.app.store;
    if (s.events.get(root)?.pubkey === this.app.me) return true;
    for (const id of s.messages.get(ch) || []) {
      const m = s.events.get(id);
      if (m.pubkey === this.app.me && threadOf(m).root === root) return true;
    }
    return false;
  }

  /** live considers a message that just arrived: while the tab is hidden it may become a notification. */
  live(ev) {
    if (document.visibilityState !== 'hidden' || !('Notification' in window) || Notification.permission !== 'granted') return;
    const s = this.app.store;
    const ch = tag(ev, 'h');
    if (!ch || !this.app.reads.joined(ch)) return;
    const dm = s.isDM(ch);
    const why = notifyReason(ev, { me: this.app.me, level: this.app.prefs.level(ch), dm, wroteIn: (root) => this.wroteIn(ch, root) });
    if (!why) return;
    const who = s.authorName(ev);
    const where = s.channels.get(ch)?.name || 'a channel';
    const title = why === 'dm' ? `${who} (direct message)` : why === 'thread' ? `${who} replied in a thread in #${where}` :
      why === 'mention' ? `${who} mentioned you in #${where}` : `${who} in #${where}`;
    const text = s.content(ev).text;
    let n;
    try {
      n = new Notification(title, { body: text.length > bodyChars ? text.slice(0, bodyChars) + '…' : text, tag: ev.id });
    } catch { return; } // a browser that shows notifications only from a service worker
    n.onclick = () => {
      window.focus();
      n.close();
      this.app.reveal(ev);
    };
  }
}
