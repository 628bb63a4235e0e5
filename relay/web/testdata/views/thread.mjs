// The thread view (thread.js) in the client's own page markup, run by
// TestThreadView: a thread opens beside the channel with its root and
// replies in order, takes live replies, shows who types in it, sends a
// reply with Enter, and closes with Escape (not while a dialog is open)
// back to its message in the channel.
import { eq, press, type, frame, hex, event, text, pageMarkup, until, viewport } from './frame.mjs';
import { Store, K } from '/static/js/store.js';
import { ThreadView } from '/static/js/thread.js';
import { renderFeed } from '/static/js/feed.js';

await pageMarkup();
const $ = (id) => document.getElementById(id);
const me = hex('me'), ann = hex('ann'), bob = hex('bob');
const ch = 'general';
const s = new Store();
s.me = me;
for (const [pk, name] of [[me, 'Me'], [ann, 'Ann'], [bob, 'Bob']]) s.add(event(K.profile, pk, JSON.stringify({ name })));
const replies = [], marked = [];
const app = {
  store: s, me, current: ch, signer: null,
  reply: async (root, t, pks) => { replies.push([root.id, t, pks]); },
  presence: { typing() {}, stopTyping() {} },
  reads: { markThread: (c, id) => marked.push([c, id]), threadUnread: () => 0 },
  reading: () => true,
  react() {}, unreact() {}, edit() {}, remove() {}, openThread: (ev) => thread.open(ev),
};
const now = Math.floor(Date.now() / 1000);
const msg = (pk, content, at, tags = [], c = ch) => event(K.stream, pk, content, [['h', c], ...tags], at);
const root = msg(ann, 'shall we ship friday?', now - 300);
const inThread = (id) => [['e', id, '', 'root']];
s.add(root);
// Replies come in any order; one names the thread but is in another channel.
s.add(msg(bob, 'tests are green', now - 100, inThread(root.id)));
s.add(msg(me, 'yes', now - 200, inThread(root.id)));
s.add(msg(bob, 'elsewhere', now - 150, inThread(root.id), 'random'));
s.add(msg(ann, 'in the channel', now - 50));

// The channel's feed, as the page shows it behind the thread.
$('channel').hidden = false;
renderFeed($('feed'), s.channelMessages(ch, { top: true }), app, new Map());
const thread = new ThreadView(app);
const rootShown = () => [...$('thread-feed').querySelectorAll('.thread-root article')].map((a) => text(a.querySelector('.msg-body')));
const repliesShown = () => [...$('thread-feed').querySelectorAll('.thread-replies article')].map((a) => text(a.querySelector('.msg-body')));

$('feed').querySelector('article .replies').click();
eq('open: the panel shows', [$('thread').hidden, document.body.classList.contains('thread-open')], [false, true]);
eq('open: the root', rootShown(), ['shall we ship friday?']);
eq('open: its replies in this channel, in order', repliesShown(), ['yes', 'tests are green']);
eq('open: no thread button inside the thread', $('thread-feed').querySelector('button[aria-label="Reply in thread"], .replies'), null);
eq('open: read', marked.at(-1), [ch, root.id]);
const area = $('thread-composer').querySelector('textarea');
eq('open: its composer has the focus', [area?.getAttribute('aria-label'), document.activeElement === area], ['Thread reply', true]);
eq('beside the channel it is no dialog', $('thread').getAttribute('role'), null);

// Live: a new reply and someone typing in the thread (not in the channel).
s.add(msg(ann, 'great, friday it is', now, inThread(root.id)));
s.ephemeral(event(K.typing, bob, '', [['h', ch], ['e', root.id, '', 'root']]));
s.ephemeral(event(K.typing, ann, '', [['h', ch]]));
thread.render();
eq('a live reply comes last', repliesShown().at(-1), 'great, friday it is');
eq('who types in the thread, and only there', text($('thread-typing')), 'Bob is typing…');

// Enter sends a reply to the thread's root.
await type('see you then');
await press('Enter');
await until('the reply', () => replies.length > 0);
eq('Enter replies in the thread', replies.pop(), [root.id, 'see you then', []]);
await frame();
eq('…and empties the box', area.value, '');

// Escape with a dialog open is the dialog's; then Escape closes the thread
// and gives the focus back to its message in the channel.
$('members-dialog').showModal();
await press('Escape');
eq('Escape closes the dialog, not the thread', [$('members-dialog').open, $('thread').hidden], [false, false]);
area.focus();
await press('Escape');
eq('Escape closes the thread', [$('thread').hidden, document.body.classList.contains('thread-open')], [true, false]);
eq('…back to its message', document.activeElement?.dataset.id, root.id);

// A deleted root leaves its replies.
thread.open(root);
s.add(event(K.deletion, ann, '', [['e', root.id], ['h', ch]]));
thread.render();
eq('a deleted root goes, its replies stay', [rootShown(), repliesShown().length], [[], 3]);
$('thread-close').click();
eq('the close button closes it', $('thread').hidden, true);

// On a phone the thread covers the channel: a modal dialog.
await viewport(390, 844);
thread.open(root);
eq('on a phone: a modal dialog over the channel', [$('thread').getAttribute('role'), $('thread').getAttribute('aria-modal'), $('thread').getBoundingClientRect().width], ['dialog', 'true', 390]);
thread.close();
await viewport(1280, 800);
thread.open(root);
eq('beside the channel again: no dialog', $('thread').getAttribute('role'), null);
thread.close();
