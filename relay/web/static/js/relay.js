// The relay connection: one websocket, NIP-01 subscriptions, NIP-42 AUTH
// when the relay asks, publishing with OK tracking, and reconnecting with
// backoff. Subscriptions survive reconnects: each is sent again.

import { wellFormed } from './event.js';

const backoffFirstMs = 1000;
const backoffMaxMs = 30000;
/** backoffVisibleMs bounds the wait while the tab is visible, so that a person looking at the page sees the relay's return within 5 s. */
const backoffVisibleMs = 4000;
const publishTimeoutMs = 15000;

export class RelayConn {
  /** url is ws(s)://host/; signer signs AUTH events; onstatus(state, detail) reports the connection. */
  constructor(url, signer, onstatus = () => {}) {
    this.url = url;
    this.signer = signer;
    this.onstatus = onstatus;
    this.subs = new Map(); // id → {filters, onevent, oneose, onclosed}
    this.pending = new Map(); // event id → {ev, resolve, reject, timer, retried}
    this.counts = new Map(); // COUNT id → {resolve, reject, timer}
    this.outbox = []; // frames waiting for an open socket
    this.authed = false;
    this.attempt = 0;
    this.seq = 0;
    this.closed = false;
    this.ws = null;
  }

  start() {
    this.open();
    // Coming back to the tab, or the network returning, is a reason to try now.
    document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') this.reconnectNow(); });
    window.addEventListener('online', () => this.reconnectNow());
  }

  /** connected reports whether the socket is open. */
  connected() { return Boolean(this.ws && this.ws.readyState === WebSocket.OPEN); }

  /** reconnectNow skips the rest of the backoff wait when the socket is down. */
  reconnectNow() {
    if (this.closed || this.ws) return;
    clearTimeout(this.retryTimer);
    this.attempt = 0;
    this.open();
  }

  stop() {
    this.closed = true;
    if (this.ws) this.ws.close();
  }

  open() {
    if (this.closed) return;
    this.onstatus('connecting');
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (err) {
      this.onstatus('offline', String(err.message || err));
      this.retry();
      return;
    }
    this.ws = ws;
    this.authed = false;
    ws.onopen = () => {
      this.attempt = 0;
      this.onstatus('connected');
      for (const [id, s] of this.subs) { s.stored = true; this.sendNow(['REQ', id, ...s.filters]); }
      for (const p of this.pending.values()) this.sendNow(['EVENT', p.ev]);
      const queued = this.outbox.splice(0);
      for (const f of queued) this.sendNow(f);
    };
    ws.onmessage = (m) => this.receive(m.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.onstatus('offline');
      this.retry();
    };
    ws.onerror = () => {};
  }

  retry() {
    if (this.closed) return;
    const cap = document.visibilityState === 'visible' ? backoffVisibleMs : backoffMaxMs;
    const base = Math.min(cap, backoffFirstMs * 2 ** this.attempt);
    this.attempt++;
    const wait = base / 2 + Math.random() * base / 2;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.open(), wait);
  }

  sendNow(frame) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(frame));
    else this.outbox.push(frame);
  }

  /**
   * subscribe opens a subscription; the returned function closes it.
   * onevent(ev, stored): stored is true for what the relay held before
   * the REQ (newest first, one second's events newest stored first) and
   * false for what arrives live after EOSE (in the order stored).
   */
  subscribe(filters, { onevent = () => {}, oneose = () => {}, onclosed = () => {} } = {}) {
    const id = 'web' + (++this.seq);
    this.subs.set(id, { filters, onevent, oneose, onclosed, stored: true });
    if (this.ws && this.ws.readyState === WebSocket.OPEN) this.sendNow(['REQ', id, ...filters]);
    return () => {
      if (!this.subs.delete(id)) return;
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.sendNow(['CLOSE', id]);
    };
  }

  /**
   * publish sends a signed event and resolves when the relay accepts it;
   * it rejects with the relay's reason. With { wait: true } it has no
   * deadline: the event is sent again on every reconnect until the relay
   * answers (the outbox's way).
   */
  publish(ev, { wait = false } = {}) {
    return new Promise((resolve, reject) => {
      const timer = wait ? 0 : setTimeout(() => {
        this.pending.delete(ev.id);
        reject(new Error('the relay did not answer within ' + publishTimeoutMs / 1000 + ' s; check the connection and try again'));
      }, publishTimeoutMs);
      this.pending.set(ev.id, { ev, resolve, reject, timer, retried: false });
      if (this.ws && this.ws.readyState === WebSocket.OPEN) this.sendNow(['EVENT', ev]);
    });
  }

  /** count asks the relay for a NIP-45 COUNT (with this relay's extensions in filter) and resolves with the number. */
  count(filter) {
    return new Promise((resolve, reject) => {
      const id = 'count' + (++this.seq);
      const timer = setTimeout(() => {
        this.counts.delete(id);
        reject(new Error('the relay did not count within ' + publishTimeoutMs / 1000 + ' s'));
      }, publishTimeoutMs);
      this.counts.set(id, { resolve, reject, timer });
      this.sendNow(['COUNT', id, filter]);
    });
  }

  async auth(challenge) {
    let ev;
    try {
      ev = await this.signer.sign({ kind: 22242, tags: [['relay', this.url], ['challenge', challenge]], content: '' });
    } catch (err) {
      this.onstatus('auth-failed', String(err.message || err));
      return;
    }
    this.authID = ev.id;
    this.sendNow(['AUTH', ev]);
  }

  receive(data) {
    let msg;
    try { msg = JSON.parse(data); } catch { return; }
    if (!Array.isArray(msg) || typeof msg[0] !== 'string') return;
    switch (msg[0]) {
      case 'EVENT': {
        const s = this.subs.get(msg[1]);
        if (s && wellFormed(msg[2])) s.onevent(msg[2], s.stored);
        break;
      }
      case 'EOSE': {
        const s = this.subs.get(msg[1]);
        if (s) { s.stored = false; s.oneose(); }
        break;
      }
      case 'COUNT': {
        const c = this.counts.get(msg[1]);
        if (!c) break;
        this.counts.delete(msg[1]);
        clearTimeout(c.timer);
        const n = msg[2] && msg[2].count;
        if (Number.isInteger(n) && n >= 0) c.resolve(n); else c.reject(new Error('the relay sent no count'));
        break;
      }
      case 'CLOSED': {
        const c = this.counts.get(msg[1]);
        if (c) { this.counts.delete(msg[1]); clearTimeout(c.timer); c.reject(new Error(String(msg[2] ?? 'the relay refused the count'))); break; }
        const s = this.subs.get(msg[1]);
        const why = String(msg[2] ?? '');
        if (!s) break;
        if (why.startsWith('auth-required') && !this.authed) { s.waitAuth = true; break; }
        this.subs.delete(msg[1]);
        this.onstatus('closed', why);
        s.onclosed(why);
        break;
      }
      case 'AUTH':
        if (typeof msg[1] === 'string') this.auth(msg[1]);
        break;
      case 'OK': this.ok(String(msg[1]), msg[2] === true, String(msg[3] ?? '')); break;
      case 'NOTICE': this.onstatus('notice', String(msg[1] ?? '')); break;
    }
  }

  ok(id, accepted, reason) {
    if (id === this.authID) {
      if (!accepted) { this.onstatus('auth-failed', reason); return; }
      this.authed = true;
      this.onstatus('authenticated');
      for (const [sid, s] of this.subs) if (s.waitAuth) { s.waitAuth = false; s.stored = true; this.sendNow(['REQ', sid, ...s.filters]); }
      for (const p of this.pending.values()) if (p.waitAuth) { p.waitAuth = false; this.sendNow(['EVENT', p.ev]); }
      return;
    }
    const p = this.pending.get(id);
    if (!p) return;
    if (!accepted && reason.startsWith('auth-required') && !p.retried) {
      p.retried = true;
      if (this.authed) this.sendNow(['EVENT', p.ev]); else p.waitAuth = true;
      return;
    }
    clearTimeout(p.timer);
    this.pending.delete(id);
    if (accepted || reason.startsWith('duplicate')) p.resolve(reason);
    else p.reject(new Error(reason || 'the relay refused the event'));
  }
}
