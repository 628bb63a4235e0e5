// One message (message.js) in a real document, run by TestMessageView:
// what it shows of its author and body, a long one folded behind Show
// more, reactions and replies, and the actions a person has on their own
// message, with real keys for editing.
import { eq, press, type, frame, hex, event, text, touch, viewport } from './frame.mjs';
import { Store, K } from '/static/js/store.js';
import { messageView, continues } from '/static/js/message.js';

const ann = hex('ann'), bot = hex('helper'), me = hex('me');
const ch = 'general';
const s = new Store();
s.me = me;
s.add(event(K.profile, ann, '{"name":"Ann"}'));
s.add(event(K.profile, me, '{"name":"Me"}'));
s.add(event(K.profile, bot, '{"name":"helper","bot":true}'));
const calls = [];
const app = {
  store: s, me,
  react: (ev, emoji) => calls.push(['react', ev.id, emoji]),
  unreact: (ev, rid) => calls.push(['unreact', ev.id, rid]),
  openThread: (ev) => calls.push(['thread', ev.id]),
  edit: async (ev, t) => { calls.push(['edit', ev.id, t]); if (t.includes('fail')) throw new Error('the relay did not answer'); },
  remove: (ev) => calls.push(['remove', ev.id]),
};
const now = Math.floor(Date.now() / 1000);
const msg = (pk, content, tags = [], at = now) => event(K.stream, pk, content, [['h', ch], ...tags], at);
const box = document.createElement('div');
box.className = 'feed';
document.body.append(box);
const show = (ev, opts) => { const a = messageView(ev, app, opts); box.replaceChildren(a); return a; };
const button = (a, name) => [...a.querySelectorAll('button')].find((b) => b.getAttribute('aria-label') === name || text(b) === name) || null;
const labels = (a) => [...a.querySelectorAll('.actions button')].map((b) => b.getAttribute('aria-label'));

// Author, time, body.
const hello = msg(ann, 'Hello **team**, see [the docs](https://example.org/docs)', [], 1767268800);
let a = show(hello);
eq('author and time', [text(a.querySelector('.author')), a.querySelector('time').getAttribute('datetime')], ['Ann', '2026-01-01T12:00:00.000Z']);
eq('named by its author for assistive technology', document.getElementById(a.getAttribute('aria-labelledby'))?.textContent, 'Ann');
eq('markdown rendered, links open apart', [text(a.querySelector('.msg-body strong')), a.querySelector('.msg-body a')?.href, a.querySelector('.msg-body a')?.target],
  ['team', 'https://example.org/docs', '_blank']);
eq('not an agent', [a.classList.contains('agent'), a.querySelector('.badge')], [false, null]);
a = show(msg(bot, 'I can help'));
eq('an agent is marked', [a.classList.contains('agent'), text(a.querySelector('.msg-head .badge'))], [true, 'agent']);
a = show(msg(bot, '⚠️ I could not process that message: the model is not configured'));
eq('a failure notice is marked', [a.classList.contains('notice'), text(a.querySelector('.badge.warn'))], [true, 'notice']);

// Someone else's message: react and reply, no edit or delete.
eq('someone else\'s: react and reply only', labels(show(hello)), ['Add reaction', 'Reply in thread']);
eq('in a thread: no reply button', labels(show(hello, { inThread: true })), ['Add reaction']);
a = show(hello);
button(a, 'Reply in thread').click();
eq('reply opens the thread', calls.pop(), ['thread', hello.id]);
const add = button(a, 'Add reaction');
add.click();
eq('the picker opens', [a.querySelector('.picker').hidden, add.getAttribute('aria-expanded')], [false, 'true']);
button(a, 'React with 🚀').click();
eq('picking reacts and closes it', [calls.pop(), a.querySelector('.picker').hidden], [['react', hello.id, '🚀'], true]);

// Reactions: one chip per emoji with its count; the person's own is
// pressed and takes theirs back; the harness's working marks are not chips.
const r1 = event(K.reaction, ann, '👍', [['e', hello.id], ['h', ch]], now);
const r2 = event(K.reaction, me, '👍', [['e', hello.id], ['h', ch]], now);
const r3 = event(K.reaction, ann, '🎉', [['e', hello.id], ['h', ch]], now);
const r4 = event(K.reaction, bot, '💬', [['e', hello.id], ['h', ch]], now);
for (const r of [r1, r2, r3, r4]) s.add(r);
a = show(hello);
const chips = [...a.querySelectorAll('.reactions .chip')];
eq('chips', chips.map((c) => [text(c), c.getAttribute('aria-pressed')]), [['👍2', 'true'], ['🎉1', 'false']]);
chips[0].click();
eq('pressing one\'s own takes it back', calls.pop(), ['unreact', hello.id, r2.id]);
chips[1].click();
eq('pressing another adds one\'s own', calls.pop(), ['react', hello.id, '🎉']);
eq('an agent at work shows as a line', text(a.querySelector('.working')), 'helper is working on this…');

// Replies: the count opens the thread.
s.add(hello);
s.add(msg(bot, 'on it', [['e', hello.id, '', 'root']]));
s.add(msg(ann, 'thanks', [['e', hello.id, '', 'root']]));
a = show(hello);
eq('the reply count', text(a.querySelector('.replies')), '2 replies');
eq('an agent that answered in the thread is no longer working', a.querySelector('.working'), null);
a.querySelector('.replies').click();
eq('…opens the thread', calls.pop(), ['thread', hello.id]);

// A long message folds to a screenful behind Show more.
const lines = (n) => Array.from({ length: n }, (_, i) => 'line ' + (i + 1)).join('\n');
eq('25 lines show whole', show(msg(ann, lines(25))).querySelector('.show-more'), null);
eq('3000 characters show whole', show(msg(ann, 'x'.repeat(3000))).querySelector('.show-more'), null);
eq('26 lines fold', show(msg(ann, lines(26))).querySelector('.msg-body').classList.contains('folded'), true);
eq('3001 characters fold', show(msg(ann, 'x'.repeat(3001))).querySelector('.msg-body').classList.contains('folded'), true);
a = show(msg(ann, lines(400)));
const body = a.querySelector('.msg-body');
const more = a.querySelector('.show-more');
eq('folded: a screenful at most, Show more', [body.getBoundingClientRect().height <= 400, text(more), more.getAttribute('aria-expanded'), more.getAttribute('aria-controls') === body.id],
  [true, 'Show more', 'false', true]);
more.click();
eq('Show more: the whole message', [body.getBoundingClientRect().height > 4000, text(more), more.getAttribute('aria-expanded')], [true, 'Show less', 'true']);
more.click();
eq('Show less: folded again', [body.getBoundingClientRect().height <= 400, text(more)], [true, 'Show more']);

// One's own message: edit with Enter, cancel with Escape, never empty.
const mine = msg(me, 'my words');
a = show(mine);
eq('one\'s own: edit and delete too', labels(a), ['Add reaction', 'Reply in thread', 'Edit message', 'Delete message']);
const edit = async () => {
  button(a, 'Edit message').click();
  const area = a.querySelector('textarea.edit-input');
  area.setSelectionRange(area.value.length, area.value.length);
  return area;
};
let area = await edit();
eq('editing: the text in a box that has the focus', [area.value, document.activeElement === area, a.dataset.editing], ['my words', true, '1']);
await type(' and more');
await press('Enter');
eq('Enter saves the edit', calls.pop(), ['edit', mine.id, 'my words and more']);
await frame();
eq('…and the box goes', [a.querySelector('textarea'), a.dataset.editing], [null, undefined]);
area = await edit();
await type(' never mind');
await press('Escape');
eq('Escape cancels', [calls.length, a.querySelector('textarea'), text(a.querySelector('.msg-body'))], [0, null, 'my words']);
area = await edit();
area.value = '   ';
await press('Enter');
eq('an empty edit is refused, saying what to do', [text(a.querySelector('.composer-error')), calls.length], ['A message cannot be empty; delete it instead.', 0]);
area.value = 'this will fail';
await press('Enter');
await frame();
eq('a failed save says why and keeps the box', [calls.pop()?.[2], text(a.querySelector('.composer-error')), a.querySelector('textarea') === area], ['this will fail', 'Not saved: the relay did not answer', true]);
await press('Escape');

// Delete asks first.
const confirm = window.confirm;
window.confirm = () => false;
button(a, 'Delete message').click();
eq('delete not confirmed: kept', calls.length, 0);
window.confirm = () => true;
button(a, 'Delete message').click();
eq('delete confirmed', calls.pop(), ['remove', mine.id]);
window.confirm = confirm;

// Grouping: one author, one kind, within five minutes, failure notices apart.
const g = (pk, at, content = 'm') => ({ ...msg(pk, content, [], at) });
eq('grouping', [
  continues(g(ann, 100), g(ann, 399)), continues(g(ann, 100), g(ann, 400)), continues(g(ann, 100), g(me, 110)),
  continues(null, g(ann, 100)), continues(g(ann, 100), g(ann, 90)), continues(g(bot, 100), g(bot, 110, '⚠️ I could not process it')),
], [true, false, false, false, false, false]);

// On a phone there is no hover: a finger resting on a message shows its
// actions, a tap does not, and resting again hides them.
await viewport(390, 844);
a = show(msg(ann, 'touch me'));
const actionsShown = () => getComputedStyle(a.querySelector('.actions')).display !== 'none';
await touch(a, 50);
eq('a tap: no actions', a.classList.contains('show-actions'), false);
await touch(a, 700);
eq('a long press: the actions', [a.classList.contains('show-actions'), actionsShown()], [true, true]);
await touch(a, 700);
eq('again: hidden', a.classList.contains('show-actions'), false);
await viewport(1280, 800);
