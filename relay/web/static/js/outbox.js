// The outbox: what the person sends is signed once, kept in this
// browser's storage and sent until the relay takes it, across outages and
// reloads. A re-send is the same event (same id), so it lands once: the
// relay answers "duplicate" to a copy it holds already.

const storageKey = (pk) => 'buzz.outbox.' + pk;
/** rateLimitRetryMs is how long a rate-limited event waits (the relay says "retry in 1s"). */
const rateLimitRetryMs = 1500;
/** maxQueued bounds what one browser keeps unsent; past it sending fails with a clear reason rather than filling storage. */
const maxQueued = 500;

export class Outbox {
  /** conn is the RelayConn; onchange() is called when what is queued or failed changes. */
  constructor(conn, pubkey, onchange = () => {}) {
    this.conn = conn;
    this.key = storageKey(pubkey);
    this.onchange = onchange;
    this.items = []; // [{ev, error}] oldest first
    this.inflight = new Set();
    this.waiters = new Map(); // id → [resolve] until the relay takes it
    try {
      const saved = JSON.parse(localStorage.getItem(this.key) || '[]');
      if (Array.isArray(saved)) this.items = saved.filter((x) => x && x.ev && typeof x.ev.id === 'string').map((x) => ({ ev: x.ev, error: String(x.error || '') }));
    } catch { this.items = []; }
  }

  save() {
    try { localStorage.setItem(this.key, JSON.stringify(this.items)); } catch { /* storage full: the events stay queued in this page */ }
    this.onchange();
  }

  /** add queues a signed event and starts sending it; it resolves when the relay has taken it. */
  add(ev) {
    if (this.items.length >= maxQueued) throw new Error(`${maxQueued} messages are waiting for the relay already; wait for them to go out`);
    if (!this.items.some((x) => x.ev.id === ev.id)) this.items.push({ ev, error: '' });
    this.save();
    const landed = new Promise((resolve) => {
      if (!this.waiters.has(ev.id)) this.waiters.set(ev.id, []);
      this.waiters.get(ev.id).push(resolve);
    });
    this.flush();
    return landed;
  }

  /** state of an event: 'queued' (not yet taken), 'failed' (refused; see error), or '' (sent or not ours). */
  state(id) {
    const it = this.items.find((x) => x.ev.id === id);
    return !it ? '' : it.error ? 'failed' : 'queued';
  }

  errorOf(id) { return this.items.find((x) => x.ev.id === id)?.error || ''; }

  queued() { return this.items.filter((x) => !x.error); }
  failed() { return this.items.filter((x) => x.error); }

  /** flush sends, in order, every queued event not on its way already. */
  flush() {
    for (const it of this.items) {
      if (it.error || this.inflight.has(it.ev.id)) continue;
      this.inflight.add(it.ev.id);
      this.conn.publish(it.ev, { wait: true }).then(() => {
        this.inflight.delete(it.ev.id);
        this.items = this.items.filter((x) => x !== it);
        for (const r of this.waiters.get(it.ev.id) || []) r();
        this.waiters.delete(it.ev.id);
        this.save();
      }, (err) => {
        this.inflight.delete(it.ev.id);
        const why = String(err.message || err);
        if (why.startsWith('rate-limited')) { setTimeout(() => this.flush(), rateLimitRetryMs); return; }
        it.error = why;
        this.save();
      });
    }
  }

  /** retry sends the refused events again and reconnects now if the relay is away. */
  retry() {
    for (const it of this.items) it.error = '';
    this.save();
    this.conn.reconnectNow();
    this.flush();
  }

  /** discard drops an event that will not be sent; it returns it. */
  discard(id) {
    const it = this.items.find((x) => x.ev.id === id);
    this.items = this.items.filter((x) => x !== it);
    this.save();
    return it?.ev;
  }
}
