// The feed (feed.js) in a real document, run by TestFeedView: a channel's
// messages from a real store (store.js), in the order they were sent,
// one author's run grouped, days and the "New" line apart, each message
// rebuilt only when what it shows changed, and the outbox's marks.
import { eq, frame, hex, event, text } from './frame.mjs';
import { Store, K } from '/static/js/store.js';
import { renderFeed } from '/static/js/feed.js';
import { Outbox } from '/static/js/outbox.js';

const ann = hex('ann'), bob = hex('bob'), me = hex('me');
const ch = 'general';
const s = new Store();
s.me = me;
s.add(event(K.profile, ann, '{"name":"Ann"}'));
s.add(event(K.profile, bob, '{"name":"Bob"}'));
s.add(event(K.profile, me, '{"name":"Me"}'));
const app = { store: s, me, react() {}, unreact() {}, openThread() {}, edit() {}, remove() {} };

const feed = document.createElement('div');
feed.className = 'feed';
feed.style.height = '500px';
feed.style.overflowY = 'auto';
document.body.append(feed);
const cache = new Map();
const render = (opts = {}) => renderFeed(feed, s.channelMessages(ch, { top: true }), app, cache, opts);
const articles = () => [...feed.querySelectorAll(':scope > article')];
const bodies = () => articles().map((a) => text(a.querySelector('.msg-body')));
const msg = (pk, content, at, tags = []) => event(K.stream, pk, content, [['h', ch], ...tags], at);

// Noon today, local time: far from a day's edges.
const d = new Date();
const noon = Math.floor(new Date(d.getFullYear(), d.getMonth(), d.getDate(), 12).getTime() / 1000);

// Messages of one second come in the relay's order: a REQ hands stored
// events newest first, so the page puts them back in the order sent.
const third = msg(ann, 'third', noon), second = msg(bob, 'second', noon), first = msg(ann, 'first', noon);
for (const ev of [third, second, first]) s.add(ev, true);
render();
eq('one second\'s stored messages in the order sent', bodies(), ['first', 'second', 'third']);
// Live ones come after, in the order they arrive, whatever their ids.
const live = [msg(bob, 'live one', noon + 30), msg(bob, 'live two', noon + 30), msg(bob, 'live three', noon + 30)];
for (const ev of live) s.add(ev);
render();
eq('live messages of one second in arrival order', bodies().slice(3), ['live one', 'live two', 'live three']);
// An older message that arrives late goes to its place, not the end.
s.add(msg(ann, 'late but older', noon - 60), true);
render();
eq('an older message goes above', bodies(), ['late but older', 'first', 'second', 'third', 'live one', 'live two', 'live three']);
eq('positions for assistive technology', articles().map((a) => a.getAttribute('aria-posinset') + '/' + a.getAttribute('aria-setsize')),
  ['1/7', '2/7', '3/7', '4/7', '5/7', '6/7', '7/7']);

// One author's run is grouped: the second and later show no avatar or
// name again; another author, or five minutes' pause, starts a new group.
eq('grouped runs', articles().map((a) => a.classList.contains('grouped')), [false, true, false, false, false, true, true]);
const shown = (a) => a.querySelector('.msg-head').getBoundingClientRect().width > 1 && getComputedStyle(a.querySelector('.avatar')).visibility !== 'hidden';
eq('a grouped message hides its name and avatar', articles().map(shown), [true, false, true, true, true, false, false]);
s.add(msg(bob, 'after a pause', noon + 30 + 5 * 60));
render();
eq('five minutes later: a new group', articles().at(-1).classList.contains('grouped'), false);
eq('…whose author shows again', text(articles().at(-1).querySelector('.author')), 'Bob');

// Days apart, and the "New" line before the first unread: each starts a new group.
const feed2 = document.createElement('div');
document.body.append(feed2);
const midnight = noon - 12 * 3600;
const y1 = msg(ann, 'late yesterday', midnight - 30), y2 = msg(ann, 'just after midnight', midnight + 30), y3 = msg(ann, 'a minute on', midnight + 90), y4 = msg(ann, 'and on', midnight + 120);
renderFeed(feed2, [y1, y2, y3, y4], app, new Map(), { days: true, newID: y4.id });
eq('days and the New line', [...feed2.children].map((c) => (c.tagName === 'ARTICLE' ? (c.classList.contains('grouped') ? 'grouped' : 'msg') : text(c))),
  [text(feed2.querySelector('.day-sep')), 'msg', 'Today', 'msg', 'grouped', 'New', 'msg']);

// A message is rebuilt only when what it shows changed.
const before = articles();
render();
eq('nothing changed: the same elements', articles().every((a, i) => a === before[i]), true);
s.add(event(K.reaction, bob, '🎉', [['e', first.id], ['p', ann], ['h', ch]]));
render();
const after = articles();
eq('a reaction rebuilds its message only', after.map((a, i) => a === before[i]), [true, false, true, true, true, true, true, true]);
eq('…which shows it', text(after[1].querySelector('.reactions')), '🎉1');

// An edit by its author shows, marked; while the person edits a message it is left alone.
s.add(event(K.edit, ann, 'first, edited', [['e', first.id], ['h', ch]], noon + 200));
render();
eq('an edit shows, marked', [bodies()[1], text(articles()[1].querySelector('.edited'))], ['first, edited', '(edited)']);
s.add(event(K.edit, bob, 'not Bob\'s to edit', [['e', third.id], ['h', ch]], noon + 200));
render();
eq('an edit by someone else does not', bodies()[3], 'third');
const editing = articles()[2];
editing.dataset.editing = '1';
s.add(event(K.reaction, ann, '👍', [['e', second.id], ['p', bob], ['h', ch]]));
render();
eq('a message being edited is not rebuilt', articles()[2] === editing, true);
delete editing.dataset.editing;
render();
eq('…and is once the edit ends', [articles()[2] === editing, text(articles()[2].querySelector('.reactions'))], [false, '👍1']);

// A long message the reader opened with Show more stays open when it is
// rebuilt (a reaction came): the reader does not lose their place.
const log = msg(bob, 'start of the log\n' + 'log line\n'.repeat(100) + 'end of the log', noon + 100);
s.add(log);
render();
const logArticle = () => articles().find((a) => a.dataset.id === log.id);
logArticle().querySelector('.show-more').click();
s.add(event(K.reaction, ann, '👍', [['e', log.id], ['p', bob], ['h', ch]]));
const opened = logArticle();
render();
eq('an opened long message, rebuilt', [logArticle() !== opened, logArticle().querySelector('.msg-body').classList.contains('folded'), text(logArticle().querySelector('.show-more')), logArticle().querySelector('.show-more').getAttribute('aria-expanded')],
  [true, false, 'Show less', 'true']);
logArticle().querySelector('.show-more').click();
s.add(event(K.reaction, bob, '🎉', [['e', log.id], ['p', bob], ['h', ch]]));
render();
eq('folded again, it stays folded', logArticle().querySelector('.msg-body').classList.contains('folded'), true);
s.add(event(K.deletion, bob, '', [['e', log.id], ['h', ch]]));
render();

// A message its author deleted goes, with its cache entry.
s.add(event(K.deletion, bob, '', [['e', second.id], ['h', ch]]));
render();
eq('a deleted message goes', [bodies().includes('second'), cache.has(second.id), articles().length], [false, false, 7]);
s.add(event(K.deletion, bob, '', [['e', third.id], ['h', ch]]));
render();
eq('a deletion by someone else does not', bodies().includes('third'), true);

// Markup in a message is shown as text, never parsed.
s.add(msg(bob, '<img src=x id=pwned> <b>bold?</b>', noon + 700));
render();
eq('markup is text', [feed.querySelector('#pwned, b') === null, bodies().at(-1)], [true, '<img src=x id=pwned> <b>bold?</b>']);

// A thread's replies are not in the channel's feed; its root counts them.
s.add(msg(ann, 'a reply', noon + 710, [['e', third.id, '', 'root']]));
render();
eq('replies stay in their thread', bodies().includes('a reply'), false);
eq('the root counts them', text(articles()[2].querySelector('.replies')), '1 reply');

// What the outbox holds shows as sending until the relay takes it, and
// what it refused says why.
const answers = [];
const conn = { publish: () => new Promise((ok, fail) => answers.push({ ok, fail })), reconnectNow() {} };
localStorage.removeItem('buzz.outbox.' + me);
app.outbox = new Outbox(conn, me);
const mine = msg(me, 'on its way', noon + 720);
app.outbox.add(mine);
s.add(mine);
render();
const state = () => text(articles().at(-1).querySelector('.outbox-state'));
eq('queued: says so', [state(), articles().at(-1).dataset.outbox], ['Sending… kept here until the relay takes it', 'queued']);
answers[0].fail(new Error('blocked: this channel is read-only'));
await frame();
render();
eq('refused: says why', state(), 'Not sent: blocked: this channel is read-only');
app.outbox.retry();
answers[1].ok('');
await frame();
render();
eq('taken: the mark goes', [state(), articles().at(-1).dataset.outbox], [null, '']);
localStorage.removeItem('buzz.outbox.' + me);
