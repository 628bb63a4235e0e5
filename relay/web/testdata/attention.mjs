// Table checks of the page's attention rules under node, run by
// TestAttentionRules: who notifies (alerts.js), the tab title, the
// typing gate (presence.js), the typing and presence the store keeps
// (a reply ends its author's typing; away and stale presence), the
// working line an answer ends, and the notification settings' events
// (prefs.js). Input: the js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { notifyReason, titleWith } = await mod('alerts.js');
const { TypingGate } = await mod('presence.js');
const { Store, K, typingShownMs, onlineShownMs } = await mod('store.js');
const { NotifyPrefs, notifyPrefix } = await mod('prefs.js');
const { typingLine } = await mod('util.js');

const me = 'a'.repeat(64), ana = 'b'.repeat(64), bo = 'c'.repeat(64);
const root = 'd'.repeat(64), other = 'e'.repeat(64);
let n = 0;
const ev = (pubkey, kind, tags, content = '', created_at = 1000) => ({ id: (++n).toString(16).padStart(64, '0'), pubkey, kind, tags, content, created_at, sig: '0'.repeat(128) });
const ch = '11111111-0000-4000-8000-000000000001';

// notifyReason: who calls the person back.
const wrote = (r) => r === root;
const base = { me, level: 'mentions', dm: false, wroteIn: wrote };
eq('plain message, mentions level', notifyReason(ev(ana, 9, [['h', ch]]), base), '');
eq('plain message, all level', notifyReason(ev(ana, 9, [['h', ch]]), { ...base, level: 'all' }), 'all');
eq('mention', notifyReason(ev(ana, 9, [['h', ch], ['p', me]]), base), 'mention');
eq('mention of another', notifyReason(ev(ana, 9, [['h', ch], ['p', bo]]), base), '');
eq('reply in my thread', notifyReason(ev(ana, 9, [['h', ch], ['e', root, '', 'reply']]), base), 'thread');
eq('reply in another thread', notifyReason(ev(ana, 9, [['h', ch], ['e', other, '', 'root'], ['e', root, '', 'reply']]), base), '');
eq('direct message', notifyReason(ev(ana, 9, [['h', ch]]), { ...base, dm: true }), 'dm');
eq('muted mention', notifyReason(ev(ana, 9, [['h', ch], ['p', me]]), { ...base, level: 'mute' }), '');
eq('my own message', notifyReason(ev(me, 9, [['h', ch], ['p', me]]), { ...base, level: 'all', dm: true }), '');

eq('title without mentions', titleWith('general · buzz', 0), 'general · buzz');
eq('title with 3', titleWith('general · buzz', 3), '(3) general · buzz');
eq('title with many', titleWith('buzz', 250), '(99+) buzz');
eq('typing line, one', typingLine(['Ana']), 'Ana is typing…');
eq('typing line, two', typingLine(['Ana', 'Bo']), 'Ana and Bo are typing…');
eq('typing line, many', typingLine(['A', 'B', 'C', 'D']), 'Several people are typing…');

// The typing gate: one per 3 s while typing, at once after a stop, none in between.
const g = new TypingGate(3000);
eq('first keystroke', g.input('c', 0), true);
eq('keystroke 1 s later', g.input('c', 1000), false);
eq('keystroke 3 s later', g.input('c', 3000), true);
eq('keystroke 4 s later', g.input('c', 4000), false);
eq('another box', g.input('c|t', 4100), true);
g.stop();
eq('after send, typing again', g.input('c', 4200), true);

// The store's typing: channel and thread apart; a message ends its author's typing.
const s = new Store();
s.me = me;
s.changed = () => {};
const t0 = 100000;
s.ephemeral(ev(ana, K.typing, [['h', ch]]), t0);
s.ephemeral(ev(bo, K.typing, [['h', ch], ['e', root, '', 'reply']]), t0);
s.ephemeral(ev(me, K.typing, [['h', ch]]), t0);
eq('typing in the channel', s.typingIn(ch, { now: t0 + 10 }), [ana]);
eq('typing in the thread', s.typingIn(ch, { root, now: t0 + 10 }), [bo]);
eq('typing expires', s.typingIn(ch, { now: t0 + typingShownMs + 1 }), []);
s.ephemeral(ev(ana, K.typing, [['h', ch]], '', 1999), t0 + 20000);
s.add(ev(ana, 9, [['h', ch]], 'done', 2000), false);
eq('a reply ends its typing at once', s.typingIn(ch, { now: t0 + 20101 }), []);
s.ephemeral(ev(ana, K.typing, [['h', ch]], '', 1999), t0 + 20200);
eq('a typing event made before it, arriving after, does not bring it back', s.typingIn(ch, { now: t0 + 20201 }), []);
s.ephemeral(ev(ana, K.typing, [['h', ch]], '', 2000), t0 + 20300);
eq('typing on in the same second shows', s.typingIn(ch, { now: t0 + 20301 }), [ana]);

// Presence: online, away, offline and stale.
s.ephemeral(ev(ana, K.presence, [], 'online', 10), t0);
s.ephemeral(ev(bo, K.presence, [], 'away', 10), t0);
eq('online', s.status(ana, t0 + 1), 'online');
eq('away', s.status(bo, t0 + 1), 'away');
eq('stale', s.status(ana, t0 + onlineShownMs + 1), '');
s.ephemeral(ev(ana, K.presence, [], 'away', 5), t0 + 2); // an older one arriving late
eq('an older presence does not win', s.status(ana, t0 + 3), 'online');
s.ephemeral(ev(ana, K.presence, [], 'offline', 11), t0 + 3);
eq('offline', s.status(ana, t0 + 4), '');
s.ephemeral(ev(bo, K.presence, [], 'not configured', 11), t0 + 3);
eq('an agent without a model provider says so', s.status(bo, t0 + 4), 'not configured');
s.ephemeral(ev(bo, K.presence, [], 'busy busy', 12), t0 + 3);
eq('an unknown status reads as offline', s.status(bo, t0 + 4), '');

// The working line: a reactor's answer in the thread ends it.
const q = ev(me, 9, [['h', ch]], 'a question', 2000);
s.add(q);
const seen = ev(ana, K.reaction, [['h', ch], ['e', q.id]], '💬', 2001);
s.add(seen);
eq('working while the turn runs', s.working(q), { who: [ana], busy: true });
s.add(ev(ana, 9, [['h', ch], ['e', q.id, '', 'reply']], 'the answer', 2003));
eq('the answer ends the working line', s.working(q), { who: [], busy: false });

// Notification settings: the person's own events, newest wins.
const app = { me, store: s };
const p = new NotifyPrefs(app);
eq('default level', p.level(ch), 'mentions');
eq('take mute', p.take(ev(me, K.appData, [['d', notifyPrefix + ch]], '{"level":"mute"}', 50)), true);
eq('muted', p.level(ch), 'mute');
eq('an older setting loses', p.take(ev(me, K.appData, [['d', notifyPrefix + ch]], '{"level":"all"}', 40)), false);
eq('another person\'s setting', p.take(ev(ana, K.appData, [['d', notifyPrefix + ch]], '{"level":"all"}', 60)), false);
eq('a read marker is not a setting', p.take(ev(me, K.appData, [['d', 'buzz:read:' + ch]], '{"t":1,"ids":[]}', 60)), false);
eq('an unknown level', p.take(ev(me, K.appData, [['d', notifyPrefix + ch]], '{"level":"loud"}', 70)), false);
eq('a newer setting wins', p.take(ev(me, K.appData, [['d', notifyPrefix + ch]], '{"level":"all"}', 80)) && p.level(ch), 'all');

report();
