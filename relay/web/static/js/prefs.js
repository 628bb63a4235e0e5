// Notification settings: per channel "all" (every message notifies),
// "mentions" (the default: mentions, replies in the person's threads and
// direct messages notify) or "mute" (no unread count, no notification;
// mentions still show their badge). Each is the person's own NIP-78
// event (kind 30078, d = "buzz:notify:<channel>", content {"level"}),
// which the relay serves to its author only, so every device agrees; the
// newest wins.

import { K } from './store.js';
import { tag } from './event.js';

export const notifyPrefix = 'buzz:notify:';
/** levels are the settings a channel can have, the default first. */
export const levels = ['mentions', 'all', 'mute'];

export class NotifyPrefs {
  /** app: {signer, conn, me, store}. */
  constructor(app) {
    this.app = app;
    this.byChannel = new Map(); // channel → {level, at: created_at of the event}
  }

  /** level is ch's setting. */
  level(ch) { return this.byChannel.get(ch)?.level || levels[0]; }

  /** take reads one of the person's NIP-78 events; other apps' and other prefixes' are left alone. */
  take(ev) {
    const d = tag(ev, 'd') || '';
    if (ev.kind !== K.appData || ev.pubkey !== this.app.me || !d.startsWith(notifyPrefix)) return false;
    let v;
    try { v = JSON.parse(ev.content); } catch { return false; }
    if (!v || !levels.includes(v.level)) return false;
    const ch = d.slice(notifyPrefix.length);
    const old = this.byChannel.get(ch);
    if (old && old.at > ev.created_at) return false;
    this.byChannel.set(ch, { level: v.level, at: ev.created_at });
    this.app.store.changed();
    return true;
  }

  /** set publishes ch's new level; it shows at once and reaches the person's other devices through the relay. */
  async set(ch, level) {
    if (!levels.includes(level)) throw new Error('unknown notification level ' + level);
    const old = this.byChannel.get(ch);
    // created_at moves on from the last, so the relay keeps this one.
    const created_at = Math.max(Math.floor(Date.now() / 1000), old ? old.at + 1 : 0);
    this.byChannel.set(ch, { level, at: created_at });
    this.app.store.changed();
    const ev = await this.app.signer.sign({ kind: K.appData, created_at, tags: [['d', notifyPrefix + ch]], content: JSON.stringify({ level }) });
    await this.app.conn.publish(ev, { wait: true });
  }
}
