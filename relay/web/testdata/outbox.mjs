// Table checks of the outbox (outbox.js) under node, run by
// TestOutboxModule: what the person writes is kept in this browser's
// storage until the relay takes it, sent as the same signed event every
// time, dropped once the relay says OK, marked failed (and not sent
// again) when the relay refuses it, sent again by Retry now, and after a
// rate limit by itself. Input: the js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { Outbox } = await mod('outbox.js');

// The browser's storage, as the page has it: strings by key.
const stored = new Map();
globalThis.localStorage = {
  getItem: (k) => (stored.has(k) ? stored.get(k) : null),
  setItem: (k, v) => { stored.set(k, String(v)); },
};

// Timers the outbox sets (its rate-limit wait) are kept to be run by hand.
const timers = [];
const realSetTimeout = globalThis.setTimeout;
globalThis.setTimeout = (f, ms) => { timers.push({ f, ms }); return timers.length; };

/**
 * conn is the relay connection as the outbox uses it (relay.js RelayConn):
 * publish(ev, {wait}) resolves when the relay says OK and rejects with its
 * reason. Each publish is recorded with the frame the socket would carry,
 * and answered by the test.
 */
function conn() {
  const c = { sent: [], reconnects: 0 };
  c.publish = (ev, opts) => new Promise((ok, fail) => { c.sent.push({ frame: JSON.stringify(['EVENT', ev]), id: ev.id, wait: opts?.wait === true, ok, fail }); });
  c.reconnectNow = () => { c.reconnects++; };
  return c;
}
const settle = () => new Promise((r) => realSetTimeout(r, 0));

const me = 'a'.repeat(64);
const key = 'buzz.outbox.' + me;
// A signed event as signer.js makes it: the outbox never looks inside.
const signed = (n) => ({ id: String(n).repeat(64).slice(0, 64), pubkey: me, created_at: 1700000000 + n, kind: 9, tags: [['h', 'general']], content: 'message ' + n, sig: 'f'.repeat(128) });
const savedIDs = () => JSON.parse(stored.get(key) || '[]').map((x) => x.ev.id);

// Written while the relay is away: queued, saved, sent once, in order.
let c1 = conn();
let changes = 0;
let ob = new Outbox(c1, me, () => { changes++; });
const e1 = signed(1), e2 = signed(2), e3 = signed(3);
let landed1 = false;
ob.add(e1).then(() => { landed1 = true; });
ob.add(e2);
eq('queued', [ob.state(e1.id), ob.state(e2.id), ob.queued().length], ['queued', 'queued', 2]);
eq('kept in storage under the person\'s key, oldest first', savedIDs(), [e1.id, e2.id]);
eq('each handed to the connection once, oldest first, to be sent until answered', c1.sent.map((s) => [s.id, s.wait]), [[e1.id, true], [e2.id, true]]);
eq('onchange told of each', changes >= 2, true);
ob.flush();
ob.add(e1);
eq('nothing sent again while on its way, and a second add of the same event keeps one copy', [c1.sent.length, ob.items.length], [2, 2]);

// The page is reloaded before the relay answers: a new outbox finds both
// in storage and sends the very same signed events (same id, same bytes).
const c2 = conn();
const ob2 = new Outbox(c2, me);
eq('after a reload: both still waiting', [ob2.state(e1.id), ob2.state(e2.id)], ['queued', 'queued']);
eq('after a reload: nothing sent before flush', c2.sent.length, 0);
ob2.flush();
eq('after a reload: the same events, byte for byte', c2.sent.map((s) => s.frame), c1.sent.map((s) => s.frame));
eq('another person\'s outbox is their own', new Outbox(conn(), 'b'.repeat(64)).items.length, 0);

// The relay takes the first (OK): it leaves storage and add's promise resolves.
c2.sent[0].ok('');
await settle();
eq('taken by the relay: no longer waiting', [ob2.state(e1.id), ob2.state(e2.id)], ['', 'queued']);
eq('taken by the relay: dropped from storage', savedIDs(), [e2.id]);
// The original page's promise resolves when its own send is answered.
c1.sent[0].ok('duplicate: have this event');
await settle();
eq('add resolves once the relay has it', landed1, true);

// The relay refuses the second: failed with the relay's reason, kept, and
// not sent again by itself.
ob = ob2;
c1 = c2;
c1.sent[1].fail(new Error('blocked: you are not a member of this channel'));
await settle();
eq('refused: failed with the reason', [ob.state(e2.id), ob.errorOf(e2.id), ob.failed().length, ob.queued().length], ['failed', 'blocked: you are not a member of this channel', 1, 0]);
eq('refused: kept in storage with its reason', JSON.parse(stored.get(key)).map((x) => [x.ev.id, x.error]), [[e2.id, 'blocked: you are not a member of this channel']]);
ob.flush();
eq('refused: flush does not send it again', c1.sent.length, 2);
const c3 = conn();
const ob3 = new Outbox(c3, me);
eq('refused: still failed after a reload', [ob3.state(e2.id), ob3.errorOf(e2.id)], ['failed', 'blocked: you are not a member of this channel']);

// Retry now: reconnects, sends the refused event again (the same one),
// and the relay takes it this time.
ob.retry();
eq('retry: waiting again', ob.state(e2.id), 'queued');
eq('retry: asks the connection to reconnect now', c1.reconnects, 1);
eq('retry: the same event sent again', [c1.sent.length, c1.sent[2]?.frame], [3, c1.sent[1].frame]);
c1.sent[2].ok('');
await settle();
eq('retry: taken, nothing left', [ob.items.length, savedIDs()], [0, []]);

// A rate limit is not a refusal: the outbox waits and sends again by itself.
ob.add(e3);
c1.sent[3].fail(new Error('rate-limited: slow down, retry in 1s'));
await settle();
eq('rate-limited: still waiting, not failed', ob.state(e3.id), 'queued');
const wait = timers.pop();
eq('rate-limited: sent again after the relay\'s second and a half', wait?.ms, 1500);
wait?.f();
eq('rate-limited: the same event sent again', [c1.sent.length, c1.sent[4]?.frame], [5, c1.sent[3].frame]);
c1.sent[4].ok('');
await settle();
eq('rate-limited: then taken', ob.items.length, 0);

// Discard (the banner's "Discard") drops a refused event and hands it back.
ob.add(e1);
c1.sent[5].fail(new Error('invalid: bad signature'));
await settle();
eq('discard: hands the event back', ob.discard(e1.id)?.id, e1.id);
eq('discard: gone from the outbox and storage', [ob.state(e1.id), savedIDs()], ['', []]);

// Damaged storage is ignored, never a crash.
for (const bad of ['{not json', '{"a":1}', '[null, 1, {"ev": {}}, {"ev": {"id": 5}}]']) {
  stored.set(key, bad);
  eq('damaged storage ' + bad + ' reads as empty', new Outbox(conn(), me).items.length, 0);
}
stored.set(key, '[{"ev":' + JSON.stringify(e1) + ',"error":null}]');
eq('a stored event with no reason reads as waiting', new Outbox(conn(), me).state(e1.id), 'queued');

// Storage full: the event stays queued in the page and is sent.
const c4 = conn();
stored.clear();
globalThis.localStorage.setItem = () => { throw new Error('QuotaExceededError'); };
const ob4 = new Outbox(c4, me);
ob4.add(e3);
eq('storage full: still queued and sent', [ob4.state(e3.id), c4.sent.length], ['queued', 1]);
globalThis.localStorage.setItem = (k, v) => { stored.set(k, String(v)); };

// Past its bound the outbox refuses, saying why and what to do.
const c5 = conn();
const ob5 = new Outbox(c5, 'c'.repeat(64));
for (let i = 0; i < 500; i++) ob5.add({ ...signed(1), id: i.toString(16).padStart(64, '0') });
let why = '';
try { ob5.add(signed(9)); } catch (e) { why = e.message; }
eq('full: refused with the count and what to do', why, '500 messages are waiting for the relay already; wait for them to go out');

report();
