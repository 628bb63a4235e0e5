// The channel view (channel.js) in the client's own page markup, run by
// TestChannelView: a channel's header, its messages (not its threads'
// replies) from a real store, the composer for a member and what a
// non-member, a private or a deleted channel offers instead, the filter
// box, the "New" line, an empty channel's opening lines, the feed's
// window over a long channel, and the members dialog showing only what
// the person may do.
import { eq, press, type, frame, hex, event, text, pageMarkup, until } from './frame.mjs';
import { Store, K } from '/static/js/store.js';
import { ChannelView } from '/static/js/channel.js';
import { RepoIndex } from '/static/js/repoview.js';

await pageMarkup();
const $ = (id) => document.getElementById(id);
const me = hex('me'), ann = hex('ann'), bob = hex('bob'), bot = hex('helper'), relay = hex('relay');
const s = new Store();
s.me = me;
for (const [pk, name, extra] of [[me, 'Me'], [ann, 'Ann'], [bob, 'Bob'], [bot, 'helper', { bot: true }]]) s.add(event(K.profile, pk, JSON.stringify({ name, ...extra })));
const meta = (id, name, extra = []) => s.add(event(K.groupMeta, relay, '', [['d', id], ['name', name], ...extra]));
const members = (id, list) => s.add(event(K.groupMembers, relay, '', [['d', id], ...list.map(([pk, role]) => ['p', pk, '', role])]));
meta('general', 'general', [['topic', 'everything else']]);
members('general', [[me, 'member'], [ann, 'admin'], [bob, 'member'], [bot, 'bot']]);
meta('ideas', 'ideas', [['channel_type', 'forum']]);
members('ideas', [[me, 'member']]);
meta('secret', 'secret', [['private']]);
members('secret', [[ann, 'admin']]);
meta('lobby', 'lobby');
members('lobby', [[ann, 'admin']]);
meta('quiet', 'quiet');
members('quiet', [[me, 'admin'], [ann, 'member']]);
meta('old', 'old');
members('old', [[me, 'member']]);
s.add(event(K.channelTombstone, relay, '', [['d', 'old']], Math.floor(Date.now() / 1000) + 10));

const posts = [], sends = [], titles = [];
let marker = null;
const app = {
  store: s, me, owner: relay, loaded: true, historyFor: '', maxEventBytes: 65536, notRelayAdmin: true,
  post: async (id, t, pks, forum) => { posts.push([id, t, pks, forum]); },
  send: async (tpl) => { sends.push(tpl); },
  reads: { enter() {}, entryMarker: () => marker, counted: (ev) => ev.pubkey !== me, threadUnread: () => 0 },
  prefs: { level: () => 'mentions', set: async () => {} },
  alerts: { render: (t) => titles.push(t) },
  presence: { typing() {}, stopTyping() {} },
  agentsPanel: { open() {} },
  repos: new RepoIndex(), // no repository shared with these channels
  flash() {}, react() {}, unreact() {}, edit() {}, remove() {}, openThread() {},
};
const view = new ChannelView(app);
const now = Math.floor(Date.now() / 1000);
const msg = (c, pk, content, at, tags = []) => event(K.stream, pk, content, [['h', c], ...tags], at);
const bodies = () => [...$('feed').querySelectorAll(':scope > article')].map((a) => text(a.querySelector('.msg-body')));
const slot = () => text($('composer-slot'));
const joinButton = () => [...$('composer-slot').querySelectorAll('button')].find((b) => text(b) === 'Join channel') || null;

// A channel one is a member of: its header, messages and composer.
const root = msg('general', ann, 'plans for friday', now - 600);
for (const ev of [root, msg('general', bob, 'ship it friday', now - 300), msg('general', me, 'agreed', now - 200),
  msg('general', bob, 'a reply in the thread', now - 100, [['e', root.id, '', 'root']])]) s.add(ev);
s.ephemeral(event(K.typing, ann, '', [['h', 'general']]));
view.show('general');
eq('shown', [$('channel').hidden, $('empty').hidden], [false, true]);
eq('header', [text($('channel-name')), text($('channel-topic')), $('feed').getAttribute('aria-label'), titles.at(-1)],
  ['# general', 'everything else', 'Messages in general', 'general · buzz']);
eq('its messages in order, not its threads\' replies', bodies(), ['plans for friday', 'ship it friday', 'agreed']);
eq('a feed of articles', $('feed').getAttribute('role'), 'feed');
eq('who is typing', text($('typing')), 'Ann is typing…');
eq('notifications for a member', [$('notify-level').hidden, $('notify-level').value], [false, 'mentions']);
const area = $('composer-slot').querySelector('textarea');
eq('a composer for a member', area?.getAttribute('aria-label'), 'Message #general');
area.focus();
await type('hello @helper, over to you');
await press('Enter');
await until('the post', () => posts.length > 0);
eq('Enter posts to the channel, mentions included', posts.pop(), ['general', 'hello @helper, over to you', [bot], false]);

// The filter box narrows the feed to what matches, by text or author.
$('search').focus();
await type('friday');
eq('filtered by text', bodies(), ['plans for friday', 'ship it friday']);
$('search').select();
await type('bob');
eq('filtered by author, thread replies found too', bodies(), ['ship it friday', 'a reply in the thread']);
$('search').select();
await type('nothing like it');
eq('no match says so', text($('feed').querySelector('.empty')), 'No message matches “nothing like it”.');
$('search').select();
await press('Backspace');
eq('cleared: all back', bodies(), ['plans for friday', 'ship it friday', 'agreed']);

// A forum lists posts; its composer writes one.
view.show('ideas');
eq('a forum', [text($('channel-name')), $('composer-slot').querySelector('textarea')?.getAttribute('aria-label')], ['≡ ideas', 'New post in ideas']);

// Not a member: a public channel offers Join; a private one, nothing but
// who to ask; one the page cannot see, likewise; a deleted one says so.
view.show('lobby');
eq('public, not a member', [slot().startsWith('You are not a member of this channel yet.'), !!joinButton(), $('composer-slot').querySelector('textarea'), $('notify-level').hidden],
  [true, true, null, true]);
joinButton().click();
await until('the join request', () => sends.length > 0);
eq('Join asks the relay to join', sends.pop(), { kind: 9021, tags: [['h', 'lobby']], content: '' });
view.show('secret');
eq('private, not a member: who to ask, no Join', [slot(), joinButton()], ['This channel is private: ask one of its admins to add you.', null]);
view.show('nowhere');
eq('unknown: private or gone', [slot(), joinButton()], ['This channel is private or does not exist: ask one of its members to add you.', null]);
view.show('old');
eq('deleted', slot(), 'This channel was deleted.');

// An empty channel opens with its opening lines once its history is in.
app.historyFor = 'quiet';
view.show('quiet');
eq('empty: opening lines, a plain region', [!!$('feed').querySelector('.feed-intro'), $('feed').getAttribute('role')], [true, 'region']);
s.add(msg('quiet', ann, 'first words', now));
view.render();
eq('the first message replaces them', [$('feed').querySelector('.feed-intro'), bodies(), $('feed').getAttribute('role')], [null, ['first words'], 'feed']);

// Back in a channel with messages since the person last read it: the
// "New" line before the first of someone else's, under the day's line.
marker = { t: now - 400, ids: [] };
app.historyFor = 'general';
view.show('general');
eq('the New line before the first unread', [...$('feed').children].map((c) => (c.tagName === 'ARTICLE' ? text(c.querySelector('.msg-body')) : text(c))),
  ['Today', 'plans for friday', 'New', 'ship it friday', 'agreed']);
marker = null;

// The members dialog lists who is in, online first, agents marked, and
// offers only what the person may do: a plain member removes no one and
// has no tabs to add people or set the topic; a channel admin has.
s.ephemeral(event(K.presence, bob, 'online', []));
view.openMembers();
const rows = () => [...$('members-list').children].map((li) => [[...li.querySelectorAll('.member-name > span')].map(text).filter(Boolean).join(' '), text(li.querySelector('.role')), !!li.querySelector('button')]);
eq('members, online first, agents marked', rows(), [['Bob online', 'member', false], ['Ann offline', 'admin', false], ['helper agent offline', 'agent', false], ['Me offline', 'member', false]]);
eq('a plain member: no add or topic tab', [$('tab-add').hidden, $('tab-topic').hidden, $('tab-invite').hidden], [true, true, true]);
$('members-dialog').close();
view.show('quiet');
view.openMembers();
eq('a channel admin: Remove for others', rows(), [['Ann offline', 'member', true], ['Me offline', 'admin', false]]);
eq('a channel admin: add and topic tabs', [$('tab-add').hidden, $('tab-topic').hidden], [false, false]);
$('members-list').querySelector('button').click();
await until('the removal', () => sends.length > 0);
eq('Remove asks the relay to remove them', sends.pop(), { kind: 9001, tags: [['h', 'quiet'], ['p', ann]], content: '' });
$('members-dialog').close();

// A long channel shows a window of its newest messages; scrolling to its
// top brings older ones, and the reader stays where they were.
const long = [];
for (let i = 0; i < 1000; i++) long.push(msg('general', i % 2 ? ann : bob, 'message ' + i, now - 5000 + i));
for (const ev of long) s.add(ev, true);
view.show('quiet');
view.show('general');
await frame();
let shown = bodies();
eq('a window of the newest', [shown.length <= 450, shown.at(-1), $('older').hidden], [true, 'agreed', false]);
const f = $('feed');
eq('opened at the bottom', f.scrollHeight - f.scrollTop - f.clientHeight < 40, true);
const first = f.querySelector(':scope > article');
f.scrollTop = 0;
await until('older messages', () => bodies().length > shown.length || bodies()[0] !== shown[0]);
await frame();
eq('scrolled to the top: older messages above', bodies().indexOf(shown[0]) > 0, true);
eq('…and what the reader saw has not moved', Math.abs(first.getBoundingClientRect().top - f.getBoundingClientRect().top) < 60, true);
