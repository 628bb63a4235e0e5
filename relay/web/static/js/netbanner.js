// The connection banner above the channel: says plainly when the relay is
// away and what waits in the outbox, and offers "Retry now"; lists what
// the relay refused, with "Retry now" and "Discard".

import { el } from './util.js';

/** offlineAfterMs is how long the socket may be down before the banner shows (a reconnect within it is not news). */
const offlineAfterMs = 1500;

export class NetBanner {
  /** app: {conn, outbox, store}; the banner goes before before. */
  constructor(app, before) {
    this.app = app;
    this.node = el('div', { id: 'net-banner', class: 'net-banner', role: 'alert', hidden: true });
    before.parentNode.insertBefore(this.node, before);
    this.state = 'connecting';
    this.downSince = 0;
    this.everUp = false;
    this.key = '';
  }

  /** status takes the connection's state from RelayConn's onstatus. */
  status(state) {
    if (state === 'connected' || state === 'authenticated') {
      this.everUp = true;
      this.downSince = 0;
    } else if ((state === 'offline' || state === 'connecting') && !this.downSince) {
      this.downSince = Date.now();
      setTimeout(() => this.render(), offlineAfterMs + 50);
    }
    if (state !== 'notice' && state !== 'closed') this.state = state;
    this.render();
  }

  render() {
    const { outbox } = this.app;
    if (!outbox) return;
    const down = this.downSince && (this.everUp || outbox.queued().length) && Date.now() - this.downSince >= offlineAfterMs && !this.app.conn.connected();
    const waiting = outbox.queued().length;
    const failed = outbox.failed();
    const key = [down, waiting, failed.map((f) => f.ev.id + f.error).join()].join('|');
    if (key === this.key) return;
    this.key = key;
    const lines = [];
    if (down) {
      lines.push(el('p', { class: 'net-line', text: 'You are offline: the relay is not answering. ' +
        (waiting ? `${waiting} message${waiting === 1 ? '' : 's'} will be sent when it is back.` : 'What you write is kept and sent when it is back.') }));
    } else if (waiting && !this.app.conn.connected()) {
      lines.push(el('p', { class: 'net-line', text: `Connecting… ${waiting} message${waiting === 1 ? '' : 's'} waiting to be sent.` }));
    }
    if (failed.length) {
      lines.push(el('p', { class: 'net-line', text: `${failed.length} message${failed.length === 1 ? ' was' : 's were'} not sent: ${failed[0].error}` }));
    }
    if (!lines.length) { this.node.hidden = true; this.node.replaceChildren(); return; }
    const actions = el('p', { class: 'net-actions' },
      el('button', { type: 'button', text: 'Retry now', onclick: () => outbox.retry() }),
      failed.length ? el('button', { type: 'button', class: 'link', text: failed.length === 1 ? 'Discard it' : 'Discard them', onclick: () => {
        for (const f of outbox.failed()) { outbox.discard(f.ev.id); this.app.store.forget(f.ev.id); }
      } }) : null);
    this.node.dataset.state = down ? 'offline' : failed.length ? 'failed' : 'waiting';
    this.node.replaceChildren(...lines, actions);
    this.node.hidden = false;
  }
}
