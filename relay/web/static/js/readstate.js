// Read state: a person's read marker for each channel is their own
// NIP-78 event (kind 30078, d = "buzz:read:<channel>", content
// {"t", "ids"}), kept by the relay and served only to its author, so
// every device they sign in on agrees. Unread counts are exact: a NIP-45
// COUNT per channel the person belongs to, since the marker, leaving out
// thread replies (counted on their thread) and the person's own messages.
// Mentions are counted apart, the same way: messages since the marker
// that tag the person (p), thread replies included; in a direct-message
// channel every unread message counts as one.
//
// A thread the person is in (they started it, replied in it or opened it)
// is counted on its own: its marker is another 30078 event, d =
// "buzz:read:<channel>/<root id>", moved as the person reads the open
// thread, and its new replies are a COUNT of the replies since then.

import { K, messageKinds } from './store.js';
import { tag, threadOf } from './event.js';

export const readMarkerPrefix = 'buzz:read:';
/** threadKey names a thread's marker: its channel and its root message. */
export const threadKey = (ch, root) => `${ch}/${root}`;
/** publishDelayMs gathers the marker moves of one reading into one event. */
const publishDelayMs = 1500;
/** recountDelayMs gathers a burst of live messages into one COUNT. */
const recountDelayMs = 300;
/** legacyKey is where read state lived before markers were events. */
const legacyKey = 'buzz.read';

export class ReadState {
  /** app: {store, conn, signer, me}. */
  constructor(app) {
    this.app = app;
    this.markers = new Map(); // channel → {t, ids, at: created_at of the marker event (0: not yet published)}
    this.counts = new Map(); // channel → exact unread count
    this.mentionCounts = new Map(); // channel → exact count of unread messages that tag the person
    this.asked = new Map(); // channel → timer of a COUNT to come
    this.publishing = new Map(); // channel → timer of a marker to publish
    this.loaded = false;
    this.entry = new Map(); // channel → its marker when the person opened it, for the "New" line
    try {
      const old = JSON.parse(localStorage.getItem(legacyKey) || '{}');
      for (const [ch, r] of Object.entries(old)) if (r && typeof r.t === 'number' && Array.isArray(r.ids)) this.markers.set(ch, { t: r.t, ids: r.ids, at: 0 });
    } catch { /* no usable legacy state */ }
  }

  /**
   * start subscribes to the person's own NIP-78 events; counts follow
   * once the markers are in. also(ev) gets every one of them too (the
   * notification settings live in the same kind).
   */
  start(also = () => {}) {
    this.app.conn.subscribe([{ kinds: [K.appData], authors: [this.app.me] }], {
      onevent: (ev) => { this.take(ev); also(ev); },
      oneose: () => { this.loaded = true; this.recountAll(); },
      // Refused (no AUTH from this signer): counts and marks go on from what this page knows.
      onclosed: () => { if (!this.loaded) { this.loaded = true; this.recountAll(); } },
    });
  }

  /** take reads one marker event (from this or another device). */
  take(ev) {
    const d = tag(ev, 'd') || '';
    if (ev.pubkey !== this.app.me || !d.startsWith(readMarkerPrefix)) return;
    const ch = d.slice(readMarkerPrefix.length);
    const thread = ch.includes('/');
    let r;
    try { r = JSON.parse(ev.content); } catch { return; }
    if (!r || !Number.isInteger(r.t) || !Array.isArray(r.ids)) return;
    const ids = r.ids.filter((x) => typeof x === 'string').slice(0, 100);
    // Markers only move forward: the furthest read of any device wins.
    const old = this.markers.get(ch);
    if (old) {
      old.at = Math.max(old.at, ev.created_at);
      if (r.t < old.t || (r.t === old.t && ids.every((id) => old.ids.includes(id)))) return;
    }
    this.markers.set(ch, { t: r.t, ids, at: Math.max(old ? old.at : 0, ev.created_at) });
    if (this.loaded) {
      if (thread) this.recountThread(...ch.split('/'));
      else this.recount(ch);
    }
    this.app.store.changed();
  }

  /** lastRead is the marker of ch: the newest second read and the counted ids read in it. */
  lastRead(ch) { return this.markers.get(ch) || { t: 0, ids: [], at: 0 }; }

  /** joined reports whether the person belongs to ch (unread counts only there). */
  joined(ch) {
    const c = this.app.store.channels.get(ch);
    return Boolean(c && c.members.has(this.app.me) && !this.app.store.gone(ch));
  }

  /** counted reports whether ev is what an unread count counts: a channel message, not a thread reply, not mine. */
  counted(ev) { return messageKinds.includes(ev.kind) && ev.pubkey !== this.app.me && !threadOf(ev).root; }

  /** unread is ch's unread count; one not yet known is asked for. */
  unread(ch) {
    if (!this.joined(ch)) return 0;
    if (!this.counts.has(ch) && this.loaded && !this.asked.has(ch)) this.recount(ch);
    return this.counts.get(ch) || 0;
  }

  /** mentions is ch's count of unread mentions (in a direct-message channel, of unread messages). */
  mentions(ch) {
    if (!this.joined(ch)) return 0;
    if (this.app.store.isDM(ch)) return this.unread(ch);
    this.unread(ch); // asks for both counts when neither is known
    return this.mentionCounts.get(ch) || 0;
  }

  /** mentionsMe reports whether ev tags the person (a mention, by the composer's p tags). */
  mentionsMe(ev) { return ev.pubkey !== this.app.me && ev.tags.some((t) => t[0] === 'p' && t[1] === this.app.me); }

  /** enter notes that the person opens ch: the marker as it is then places the "New" line. */
  enter(ch) { this.entry.delete(ch); }

  /** entryMarker is ch's marker from before this opening, or null while the markers are not in. */
  entryMarker(ch) { return this.entry.get(ch) || null; }

  /** mark moves ch's marker to the newest message the page holds there (the channel is being read). */
  mark(ch) {
    if (!this.loaded) return; // the stored markers first: they place the "New" line
    if (!this.entry.has(ch)) { const m = this.lastRead(ch); this.entry.set(ch, { t: m.t, ids: [...m.ids] }); }
    const s = this.app.store;
    if (this.counts.get(ch) !== 0) { this.counts.set(ch, 0); }
    if (this.mentionCounts.get(ch) !== 0) { this.mentionCounts.set(ch, 0); }
    this.advance(ch, [...(s.messages.get(ch) || [])].map((id) => s.events.get(id)), (ev) => this.counted(ev));
  }

  /**
   * advance moves key's marker to the newest of evs, naming the ones of
   * that second that counted(ev) counts, and publishes it soon.
   */
  advance(key, evs, counted) {
    let t = -1;
    for (const ev of evs) t = Math.max(t, ev.created_at);
    if (t < 0) return;
    const ids = evs.filter((ev) => ev.created_at === t && counted(ev)).map((ev) => ev.id);
    const old = this.lastRead(key);
    if (old.t > t || (old.t === t && ids.every((id) => old.ids.includes(id)))) return;
    this.markers.set(key, { t, ids, at: old.at });
    clearTimeout(this.publishing.get(key));
    this.publishing.set(key, setTimeout(() => this.publish(key), publishDelayMs));
  }

  /** inThread reports whether the person is in root's thread: started it, replied in it, or read it. */
  inThread(ch, root) {
    if (root.pubkey === this.app.me || this.markers.has(threadKey(ch, root.id))) return true;
    return this.app.store.channelMessages(ch, { root: root.id }).some((ev) => ev.pubkey === this.app.me);
  }


  /** threadUnread is how many replies in root's thread came since the person last read it (0 outside threads they are in). */
  threadUnread(ch, root) {
    if (!this.joined(ch) || !this.inThread(ch, root)) return 0;
    const key = threadKey(ch, root.id);
    if (!this.counts.has(key) && this.loaded && !this.asked.has(key)) this.recountThread(ch, root.id);
    return this.counts.get(key) || 0;
  }

  /** markThread moves the marker of root's thread to its newest reply (the open thread is being read). */
  markThread(ch, root) {
    if (!this.loaded) return;
    const key = threadKey(ch, root);
    if (this.counts.get(key) !== 0) this.counts.set(key, 0);
    // The thread's messages, each counted as its COUNT counts them: not mine.
    this.advance(key, this.app.store.channelMessages(ch, { root }), (ev) => ev.pubkey !== this.app.me);
  }

  /** readingThread is the root of the thread the person has open and in view, or ''. */
  readingThread() { return this.app.reading() && this.app.thread?.root ? this.app.thread.root.id : ''; }

  /** publish sends ch's marker; created_at moves on from the last so the relay keeps the newest. */
  async publish(ch) {
    this.publishing.delete(ch);
    const m = this.markers.get(ch);
    if (!m) return;
    const created_at = Math.max(Math.floor(Date.now() / 1000), m.at + 1);
    m.at = created_at;
    try {
      const ev = await this.app.signer.sign({ kind: K.appData, created_at, tags: [['d', readMarkerPrefix + ch]], content: JSON.stringify({ t: m.t, ids: m.ids }) });
      await this.app.conn.publish(ev, { wait: true });
    } catch { /* the next reading publishes again */ }
  }

  /** seen notes a live message: its channel's count, or its thread's, is asked again. */
  seen(ev) {
    const ch = tag(ev, 'h');
    if (!ch || !this.loaded) return;
    if ((this.counted(ev) || this.mentionsMe(ev)) && ch !== this.app.reading()) this.recount(ch);
    const root = threadOf(ev).root;
    if (root && ev.pubkey !== this.app.me && root !== this.readingThread() && this.counts.has(threadKey(ch, root))) this.recountThread(ch, root);
  }

  recountAll() {
    for (const ch of this.app.store.channels.keys()) if (this.joined(ch)) this.recount(ch);
    for (const key of this.counts.keys()) if (key.includes('/')) this.recountThread(...key.split('/'));
  }

  /** recountThread asks the relay how many replies root's thread has had since its marker. */
  recountThread(ch, root) {
    const key = threadKey(ch, root);
    this.soon(key, async () => {
      const m = this.lastRead(key);
      try {
        const n = await this.app.conn.count({ kinds: messageKinds, '#h': [ch], '#e': [root], since: m.t, exclude_authors: [this.app.me] });
        if (this.lastRead(key).t === m.t && root !== this.readingThread()) this.counts.set(key, Math.max(0, n - m.ids.length));
        else if (root === this.readingThread()) this.counts.set(key, 0);
        this.app.store.changed();
      } catch {
        if (!this.counts.has(key)) this.counts.set(key, 0); // asked again on the next reply or reconnect
      }
    });
  }

  /** soon runs ask (a COUNT) for key after recountDelayMs, once for a burst of calls. */
  soon(key, ask) {
    clearTimeout(this.asked.get(key));
    this.asked.set(key, setTimeout(async () => {
      await ask();
      this.asked.delete(key);
    }, recountDelayMs));
  }

  /** recount asks the relay how many counted messages ch has since the marker. */
  recount(ch) {
    this.soon(ch, async () => {
      const m = this.lastRead(ch);
      try {
        const me = this.app.me;
        const [n, at] = await Promise.all([
          this.app.conn.count({ kinds: messageKinds, '#h': [ch], since: m.t, top_level: true, exclude_authors: [me] }),
          this.app.conn.count({ kinds: messageKinds, '#h': [ch], '#p': [me], since: m.t, exclude_authors: [me] }),
        ]);
        const cur = this.lastRead(ch);
        // The marker's own second: what it names as read is not counted again.
        const s = this.app.store;
        const readMentions = m.ids.filter((id) => { const ev = s.events.get(id); return ev && this.mentionsMe(ev); }).length;
        if (cur.t === m.t && ch !== this.app.reading()) {
          this.counts.set(ch, Math.max(0, n - m.ids.length));
          this.mentionCounts.set(ch, Math.max(0, at - readMentions));
        } else if (ch === this.app.reading()) { this.counts.set(ch, 0); this.mentionCounts.set(ch, 0); }
        this.app.store.changed();
      } catch {
        if (!this.counts.has(ch)) this.counts.set(ch, 0); // asked again on the next message or reconnect
        if (!this.mentionCounts.has(ch)) this.mentionCounts.set(ch, 0);
      }
    });
  }
}
