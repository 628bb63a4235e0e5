// Table checks of the agents panel's model (agents.js) under node, run by
// TestAgentsModule. Input: the js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { agentRows, agentKeys, usageText } = await mod('agents.js');
const { Store, K } = await mod('store.js');

const me = 'a'.repeat(64), bot = 'b'.repeat(64), helper = 'c'.repeat(64), person = 'd'.repeat(64), stranger = 'e'.repeat(64);
const msg = '1'.repeat(64), msg2 = '2'.repeat(64);
const ch = '11111111-0000-4000-8000-000000000001', other = '11111111-0000-4000-8000-000000000002';
let n = 0;
const ev = (pubkey, kind, tags, content = '', created_at = 1000) => ({ id: (++n).toString(16).padStart(64, '0'), pubkey, kind, tags, content, created_at, sig: '0'.repeat(128) });

const s = new Store();
s.me = me;
s.add(ev(bot, K.profile, [], JSON.stringify({ name: 'Builder', bot: true })));
s.add(ev(helper, K.profile, [], JSON.stringify({ name: 'Helper' })));
s.add(ev(person, K.profile, [], JSON.stringify({ name: 'Pat' })));
s.add(ev(me, K.profile, [], JSON.stringify({ name: 'Me' })));
s.add(ev(stranger, K.groupMeta, [['d', ch], ['name', 'general']]));
s.add(ev(stranger, K.groupMeta, [['d', other], ['name', 'ops']]));
s.add(ev(stranger, K.groupMembers, [['d', ch], ['p', me, '', 'admin'], ['p', bot, '', 'bot'], ['p', person]]));
s.add(ev(stranger, K.groupMembers, [['d', other], ['p', helper, '', 'bot']]));
s.agents.set(bot, me); // as a verified NIP-OA attestation would

eq('agent keys: a bot profile and bot roles, not people', agentKeys(s).sort(), [bot, helper].sort());

const now = Date.now();
s.ephemeral(ev(bot, K.presence, [['model', 'gpt-x'], ['usage', '12345', '0.4200']], 'online', Math.floor(now / 1000)));
s.ephemeral(ev(helper, K.presence, [], 'paused', Math.floor(now / 1000)));
s.ephemeral(ev(person, K.presence, [], 'online', Math.floor(now / 1000)));
const status = (agent, id, state, extra = {}) => ev(agent, K.turnStatus, [['h', ch], ['e', id]], JSON.stringify({ state, at: extra.at || 1000, ...extra }));
s.ephemeral(status(bot, msg, 'working', { at: 2000, turn: 't1' }));
s.ephemeral(status(bot, msg2, 'failed', { at: 1500, cause: 'the model refused the key' }));

let rows = agentRows(s, { me, current: ch, admin: true, now });
eq('rows, by name', rows.map((r) => r.name), ['Builder', 'Helper']);
const [b, h] = rows;
eq('owner', [b.owner, b.ownerName], [me, 'Me']);
eq('state online', [b.state, b.stateWord], ['online', 'Online']);
eq('model and usage from presence', [b.model, b.tokens, b.cost], ['gpt-x', 12345, 0.42]);
eq('channels', b.channels.map((c) => c.name), ['general']);
eq('running turns', b.running, 1);
eq('last error', b.lastError, 'the model refused the key');
eq('the owner may pause', b.mayPause, true);
eq('in the open channel', b.inChannel, true);
eq('an admin may add or remove', b.mayAdd, true);
eq('paused agent', [h.state, h.stateWord, h.running, h.lastError], ['paused', 'Paused', 0, '']);
eq('no owner: nobody may pause', h.mayPause, false);
eq('not in the open channel', h.inChannel, false);

rows = agentRows(s, { me: person, current: ch, admin: false, now });
eq('a plain member may not pause another\'s agent', rows[0].mayPause, false);
eq('nor add it', rows[0].mayAdd, false);

rows = agentRows(s, { me, current: '', admin: false, now: now + 10 * 60 * 1000 });
eq('presence gone stale: offline', [rows[0].state, rows[0].stateWord], ['', 'Offline']);
eq('offline: no model or usage shown', [rows[0].model, rows[0].tokens, rows[0].cost], ['', 0, null]);
eq('offline: no pause', rows[0].mayPause, false);
eq('no open channel: no add', rows[0].mayAdd, false);

s.ephemeral(status(bot, msg, 'done', { at: 3000, turn: 't1' }));
eq('a turn that ended is not running', agentRows(s, { me, now }).find((r) => r.pk === bot).running, 0);

s.ephemeral(ev(bot, K.presence, [['usage', 'lots', '-1']], 'online', Math.floor(now / 1000) + 5));
eq('garbled usage reads as none', [agentRows(s, { me, now }).find((r) => r.pk === bot).tokens, agentRows(s, { me, now }).find((r) => r.pk === bot).cost], [0, null]);

eq('usage words', [usageText(0, null), usageText(1234, null), usageText(1234, 0.5)], ['No usage today', '1,234 tokens today', '1,234 tokens today · $0.50']);

report();
