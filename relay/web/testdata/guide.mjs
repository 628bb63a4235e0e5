// Table checks of the first-run guide's model and an empty channel's
// opening lines (guide.js) under node, run by TestGuideModule. Input: the
// js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { guideSteps, channelIntro, inviteTarget } = await mod('guide.js');
const { Store, K } = await mod('store.js');

const me = 'a'.repeat(64), bot = 'b'.repeat(64), pat = 'd'.repeat(64), relayKey = 'e'.repeat(64);
const general = '11111111-0000-4000-8000-000000000001', ops = '11111111-0000-4000-8000-000000000002', dm = '11111111-0000-4000-8000-000000000003';
let n = 0, at = 1000;
const ev = (pubkey, kind, tags, content = '') => ({ id: (++n).toString(16).padStart(64, '0'), pubkey, kind, tags, content, created_at: ++at, sig: '0'.repeat(128) });
const steps = (s, current = '') => Object.fromEntries(guideSteps(s, me, current).map((x) => [x.id, x]));

const s = new Store();
s.me = me;
s.add(ev(me, K.profile, [], JSON.stringify({ name: 'Me' })));
let g = steps(s);
eq('an empty workspace: nothing done', [g.channel.done, g.invite.done, g.agent.done], [false, false, false]);
eq('no channel to invite to', [g.invite.channel, inviteTarget(s, me)], ['', null]);
eq('no agent known', g.agent.agent, '');

s.add(ev(relayKey, K.groupMeta, [['d', ops], ['name', 'ops']]));
s.add(ev(relayKey, K.groupMembers, [['d', ops], ['p', pat]]));
eq('a channel me is not in does not count', steps(s).channel.done, false);
s.add(ev(relayKey, K.groupMeta, [['d', dm], ['name', 'x'], ['channel_type', 'dm']]));
s.add(ev(relayKey, K.groupMembers, [['d', dm], ['p', me], ['p', pat]]));
eq('a direct message is not a channel made', steps(s).channel.done, false);

s.add(ev(relayKey, K.groupMeta, [['d', general], ['name', 'general']]));
s.add(ev(relayKey, K.groupMembers, [['d', general], ['p', me, '', 'owner']]));
s.add(ev(relayKey, K.groupMembers, [['d', ops], ['p', pat], ['p', me]]));
g = steps(s);
eq('a channel of me\'s: done', [g.channel.done, g.channel.name], [true, 'general']);
eq('the invite goes to #general', [g.invite.channel, g.invite.channelName], [general, 'general']);
eq('the open channel comes first', steps(s, ops).invite.channel, ops);
eq('someone else in a channel with me: invited', [g.invite.done, g.invite.with], [true, 'ops']);

s.add(ev(bot, K.profile, [], JSON.stringify({ name: 'Builder', bot: true })));
g = steps(s);
eq('an agent in none of my channels', [g.agent.agent, g.agent.agentName, g.agent.channel], [bot, 'Builder', '']);
s.add(ev(relayKey, K.groupMembers, [['d', general], ['p', me, '', 'owner'], ['p', bot, '', 'bot']]));
g = steps(s);
eq('the agent in #general', [g.agent.channel, g.agent.channelName, g.agent.done], [general, 'general', false]);
const alone = new Store();
alone.me = me;
alone.add(ev(relayKey, K.groupMeta, [['d', general], ['name', 'general']]));
alone.add(ev(relayKey, K.groupMembers, [['d', general], ['p', me], ['p', bot, '', 'bot']]));
eq('an agent with me is not a teammate invited', guideSteps(alone, me).find((x) => x.id === 'invite').done, false);

s.add(ev(me, K.stream, [['h', general]], 'hello'));
eq('a message without the agent: not yet', steps(s).agent.done, false);
s.add(ev(me, K.stream, [['h', general], ['p', bot]], '@Builder hi'));
eq('a mention of the agent: done', steps(s).agent.done, true);

eq('#general\'s opening lines', channelIntro(s, me, general), { name: 'general', people: ['you'], agent: bot, agentName: 'Builder', agentsKnown: true });
eq('#ops\'s opening lines', channelIntro(s, me, ops), { name: 'ops', people: ['you', pat.slice(0, 8)], agent: '', agentName: '', agentsKnown: true });

report();
