// Table checks of the search view (search.js), the inbox (inbox.js), the
// text their previews show (markdown.js plain) and direct messages
// (dm.js) under node, run by TestFindModules. Input: the js directory.
// Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { highlightTerms, snippet, groupByChannel } = await mod('search.js');
const { inboxItems } = await mod('inbox.js');
const { dmTitle, dmList, resolvePeople, existingDM, dmTemplates } = await mod('dm.js');
const { Store, K } = await mod('store.js');
const { plain } = await mod('markdown.js');
const { PRIndex } = await mod('repo.js');

// markdown.js plain: the text a preview (inbox, search snippet) shows.
eq('preview: marks read, blocks joined', plain('Here is **the plan**:\n\n1. read the notes\n2. write it\n\n`buzz messages send` posts it.'),
  'Here is the plan: read the notes write it buzz messages send posts it.');
eq('preview: link text without its target, code and quotes kept', plain('see [docs](https://x.org) and\n```js\nlet a = 1;\n```\n> quoted _text_'), 'see docs and let a = 1; quoted text');

// search.js
eq('terms: words and phrases, operators left out', highlightTerms('release "the notes" from:@bob in:#general has:file before:2026-01-01 x'), ['release', 'the notes', 'x']);
eq('snippet marks every match', snippet('The Release notes: release!', ['release']), [{ text: 'The ', hit: false }, { text: 'Release', hit: true }, { text: ' notes: ', hit: false }, { text: 'release', hit: true }, { text: '!', hit: false }]);
const long = 'a'.repeat(300) + ' needle ' + 'b'.repeat(300);
const cut = snippet(long, ['needle'], 60);
eq('a long text is cut around its first match', [cut[0].text, cut.some((p) => p.hit && p.text === 'needle'), cut[cut.length - 1].text], ['…', true, '…']);
eq('no match: the start', snippet('plain words', ['zzz']), [{ text: 'plain words', hit: false }]);
const r = (id, h) => ({ id, tags: h ? [['h', h]] : [] });
eq('groups in the order of their best result', groupByChannel([r('1', 'b'), r('2', 'a'), r('3', 'b'), r('4', '')]).map((g) => [g.ch, g.evs.map((e) => e.id)]), [['b', ['1', '3']], ['a', ['2']], ['', ['4']]]);

// dm.js and inbox.js share one store
const me = 'a'.repeat(64), ada = 'b'.repeat(64), bot = 'c'.repeat(64), relay = 'f'.repeat(64);
const general = '11111111-0000-4000-8000-000000000001', dm = '11111111-0000-4000-8000-000000000002', dm2 = '11111111-0000-4000-8000-000000000003';
let n = 0;
const ev = (pubkey, kind, tags, content = '', created_at = 1000) => ({ id: (++n).toString(16).padStart(64, '0'), pubkey, kind, tags, content, created_at, sig: '0'.repeat(128) });
const s = new Store();
s.me = me;
s.add(ev(ada, K.profile, [], JSON.stringify({ name: 'Ada' })));
s.add(ev(bot, K.profile, [], JSON.stringify({ name: 'Builder', bot: true })));
s.add(ev(relay, K.groupMeta, [['d', general], ['name', 'general']]));
s.add(ev(relay, K.groupMembers, [['d', general], ['p', me], ['p', ada], ['p', bot]]));
s.add(ev(relay, K.groupMeta, [['d', dm], ['name', 'dm'], ['channel_type', 'dm'], ['private']]));
s.add(ev(relay, K.groupMembers, [['d', dm], ['p', me], ['p', ada]]));
s.add(ev(relay, K.groupMeta, [['d', dm2], ['name', 'dm'], ['channel_type', 'dm'], ['private']]));
s.add(ev(relay, K.groupMembers, [['d', dm2], ['p', ada], ['p', bot]]));

eq('a dm is named after the others', dmTitle(s, s.channels.get(dm), me), 'Ada');
eq('only my dms are listed', dmList(s, me).map((d) => d.c.id), [dm]);
eq('people by name, npub-less hex, case-insensitive', resolvePeople(s, 'ada, BUILDER, ' + bot), { pks: [ada, bot], errors: [] });
eq('an unknown name is named', resolvePeople(s, 'Zed').errors, ['nobody is named Zed']);
eq('the existing dm with exactly those people', [existingDM(s, me, [ada]), existingDM(s, me, [ada, bot])], [dm, '']);
eq('dm templates: a private dm channel, then its members', dmTemplates(dm2, [ada, bot]).map((t) => [t.kind, t.tags]),
  [[9007, [['h', dm2], ['name', 'dm'], ['visibility', 'private'], ['channel_type', 'dm']]], [9000, [['h', dm2], ['p', ada], ['p', bot], ['role', 'member']]]]);

const mine = ev(me, K.stream, [['h', general]], 'my thread', 1000);
s.add(mine);
const reply = ev(ada, K.stream, [['h', general], ['e', mine.id, '', 'root']], 'a reply to me', 1010);
const mention = ev(bot, K.stream, [['h', general], ['p', me]], 'hey @me', 1020);
const other = ev(ada, K.stream, [['h', general]], 'not for me', 1030);
const direct = ev(ada, K.stream, [['h', dm]], 'psst', 1005);
const notMine = ev(ada, K.stream, [['h', dm2]], 'between others', 1040);
const ask = ev(bot, K.approvalRequest, [['h', general], ['p', me], ['option', 'allow', 'allow_once']], 'run rm?', 900);
for (const e of [reply, mention, other, direct, notMine, ask]) s.add(e);
const marker = { [dm]: { t: 1005 } };
const items = inboxItems(s, me, (ch) => marker[ch] || { t: 0 });
eq('inbox: unread first, newest first, each with why', items.map((i) => [i.ev.id === mention.id ? 'mention' : i.ev.id === reply.id ? 'reply' : i.ev.id === direct.id ? 'direct' : i.ev.id === ask.id ? 'ask' : '?', i.why, i.unread]),
  [['mention', 'mention', true], ['reply', 'reply', true], ['ask', 'approval', true], ['direct', 'dm', false]]);
s.add(ev(bot, K.approvalGrant, [['h', general], ['e', ask.id], ['p', bot], ['option', 'allow']], '', 950));
eq('an answered approval leaves', inboxItems(s, me, () => ({ t: 0 })).some((i) => i.why === 'approval'), false);

// Reviews requested of me: open pull requests naming me, not mine, not reviewed by me.
const prs = new PRIndex();
const addPR = (e) => { s.add(e); prs.add(e); return e; };
const repoA = ['a', '30617:' + relay + ':' + me + '/proj'];
const asked = addPR(ev(bot, K.pullRequest, [repoA, ['h', general], ['p', me], ['subject', 'Fix it']], 'why', 1100));
addPR(ev(bot, K.pullRequest, [repoA, ['h', general], ['p', ada], ['subject', 'Not me']], '', 1101));
addPR(ev(me, K.pullRequest, [repoA, ['h', general], ['p', me], ['subject', 'Mine']], '', 1102));
const closed = addPR(ev(bot, K.pullRequest, [repoA, ['h', general], ['p', me], ['subject', 'Closed']], '', 1103));
addPR(ev(bot, 1632, [['e', closed.id, '', 'root'], ['h', general]], '', 1104));
const reviewed = addPR(ev(bot, K.pullRequest, [repoA, ['h', general], ['p', me], ['subject', 'Reviewed']], '', 1105));
addPR(ev(me, 1111, [['E', reviewed.id], ['K', '1618'], ['h', general], ['buzz-review', 'approve']], 'ok', 1106));
const revs = (list) => inboxItems(s, me, () => ({ t: 2000 }), list).filter((i) => i.why === 'review').map((i) => [i.ev.id === asked.id, i.unread]);
eq('a review requested of me waits unread, read markers or not', revs(prs), [[true, true]]);
addPR(ev(me, 1111, [['E', asked.id], ['K', '1618'], ['h', general], ['buzz-review', 'request-changes']], 'not yet', 1107));
eq('my review takes it out', revs(prs), []);
// Asked later in a comment (buzz pr request-review, the page's Request review).
const later = addPR(ev(bot, K.pullRequest, [repoA, ['h', general], ['p', ada], ['subject', 'Asked later']], '', 1108));
addPR(ev(ada, 1111, [['E', later.id], ['K', '1618'], ['h', general], ['p', me], ['buzz-review-request', me]], 'please look', 1109));
eq('a review asked of me in a comment waits too', inboxItems(s, me, () => ({ t: 2000 }), prs).filter((i) => i.why === 'review').map((i) => i.ev.id === later.id), [true]);

report();
