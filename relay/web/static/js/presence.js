// What the page says of the person as they use it, as ephemeral events
// the relay passes on and never stores: presence (kind 20001, content
// "online", "away" or "offline") every minute while the tab is open,
// "away" once it has been hidden a while, "online" again as soon as it
// shows (and once more when someone new says they are online, so they
// see who is here at once); and typing (kind 20002, h-tagged with the channel, and with the
// thread's e tags in a thread) while they type, at most one every 3 s,
// none once they send or leave the box. The relay passes a private
// channel's typing to its members only.

import { K } from './store.js';
import { threadTags } from './event.js';

/** presenceEveryMs is how often "online" is said again (the store counts one for 150 s). */
export const presenceEveryMs = 60000;
/** awayAfterMs is how long the tab stays hidden before the person shows as away. */
export const awayAfterMs = 120000;
/**
 * answerEveryMs bounds how often the page answers a newcomer's presence
 * with its own: presence is not stored, so someone who just opened the
 * page would otherwise learn who is here only at each one's next minute.
 */
export const answerEveryMs = 10000;
/** typingEveryMs is the least time between two typing events of one person. */
export const typingEveryMs = 3000;

/**
 * TypingGate decides when a typing event goes out: on input with at least
 * typingEveryMs since the last, never after a send or a blur until the
 * person types again. Pure; the clock is passed in.
 */
export class TypingGate {
  constructor(everyMs = typingEveryMs) { this.everyMs = everyMs; this.last = -Infinity; this.where = ''; }

  /** input reports whether typing in where (channel|thread) at now should send a typing event. */
  input(where, now) {
    if (where !== this.where) { this.where = where; this.last = -Infinity; }
    if (now - this.last < this.everyMs) return false;
    this.last = now;
    return true;
  }

  /** stop ends the typing: sent or left. The next input may send at once. */
  stop() { this.last = -Infinity; this.where = ''; }
}

export class Presence {
  /** app: {signer, conn}. */
  constructor(app) {
    this.app = app;
    this.gate = new TypingGate();
    this.awayAfterMs = awayAfterMs; // a field, so a test may shorten it from the console (window.buzz.presence)
    this.status = '';
    this.said = false; // whether a presence went out since start
    this.started = false;
    this.answered = -Infinity; // when a newcomer was last answered
    this.awayTimer = 0;
  }

  /** start says "online" now and every minute, and follows the tab's visibility. */
  start() {
    this.started = true;
    this.say(document.visibilityState === 'hidden' ? 'away' : 'online');
    setInterval(() => this.say(this.status || 'online'), presenceEveryMs);
    document.addEventListener('visibilitychange', () => {
      clearTimeout(this.awayTimer);
      if (document.visibilityState === 'visible') this.say('online');
      else this.awayTimer = setTimeout(() => this.say('away'), this.awayAfterMs);
    });
    window.addEventListener('pagehide', () => this.say('offline'));
  }

  /** say publishes a presence status. */
  async say(status) {
    this.status = status === 'offline' ? '' : status;
    this.said = await this.send({ kind: K.presence, tags: [], content: status });
  }

  /** again says the status once more: the connection is back (or signed in), and what was said before it may be lost. */
  again() { if (this.started) this.say(this.status || (document.visibilityState === 'hidden' ? 'away' : 'online')); }

  /** heard notes another's presence; one not known to be here is answered with ours (at most once per answerEveryMs). */
  heard(ev, known, now = Date.now()) {
    if (known || ev.pubkey === this.app.me || ev.kind !== K.presence || ev.content !== 'online' || now - this.answered < answerEveryMs) return;
    this.answered = now;
    this.again();
  }

  /** typing notes a keystroke in ch (in the thread of parent, when set). */
  typing(ch, parent = null) {
    if (!ch || !this.gate.input(ch + '|' + (parent?.id || ''), Date.now())) return;
    this.send({ kind: K.typing, tags: [['h', ch], ...(parent ? threadTags(parent) : [])], content: '' });
  }

  /** stopTyping: the person sent or left the box; nothing more is said until they type again. */
  stopTyping() { this.gate.stop(); }

  /** send signs and sends tpl if the relay is there; it reports whether it went. */
  async send(tpl) {
    if (!this.app.conn.connected()) return false; // ephemeral: said now or never
    try {
      const ev = await this.app.signer.sign(tpl);
      this.app.conn.sendNow(['EVENT', ev]); // no OK awaited: a lost typing event is not worth a retry
      return true;
    } catch { return false; } // a signer that refuses (an extension's prompt dismissed) says nothing
  }
}
