// The turn card (turncard.js) in a real document, run by TestTurnCardView:
// an agent's turn status events (kind 20100) through a real store show as
// cards under the message: state, ticking time, step, Stop only for who
// may stop it, and the final line; the feed redraws a card as it changes.
import { eq, hex, event, text } from './frame.mjs';
import { Store, K } from '/static/js/store.js';
import { turnCards, tickTurnCards } from '/static/js/turncard.js';
import { renderFeed } from '/static/js/feed.js';

const me = hex('me'), agent = hex('helper'), other = hex('scout'), admin = hex('admin'), stranger = hex('stranger');
const ch = 'general';
const s = new Store();
s.me = me;
s.add(event(K.profile, me, '{"name":"Me"}'));
s.add(event(K.profile, agent, '{"name":"helper","bot":true}'));
s.add(event(K.profile, other, '{"name":"scout","bot":true}'));
s.add(event(K.groupMembers, hex('relay'), '', [['d', ch], ['p', me, '', 'member'], ['p', admin, '', 'admin'], ['p', agent, '', 'bot']]));
const stops = [];
const app = { store: s, me, stopTurn: (ev) => stops.push(ev.id), react() {}, unreact() {}, openThread() {}, edit() {}, remove() {} };
const ask = event(K.stream, me, '@helper please summarise', [['h', ch], ['p', agent]]);
s.add(ask);
let at = Date.now();
const status = (pk, c) => s.ephemeral(event(K.turnStatus, pk, JSON.stringify({ at: ++at, turn: 't1', ...c }), [['h', ch], ['e', ask.id]]));
const box = document.createElement('div');
document.body.append(box);
const cards = (who = app) => { const c = turnCards(ask, who); box.replaceChildren(...(c ? [c] : [])); return [...box.querySelectorAll('.turn-card')]; };
const stop = (c) => c.querySelector('button.turn-stop');

eq('no status: no card', turnCards(ask, app), null);

const started = Date.now() - 65000;
status(agent, { state: 'working', startedAt: started, step: 'shell', owner: me });
let [card] = cards();
eq('working: state, who, time, step', [card.dataset.state, text(card.querySelector('.turn-line')), text(card.querySelector('.turn-step')), !!card.querySelector('.dots')],
  ['working', 'helper is working on this · 1m 05s', 'shell', true]);
eq('a status for assistive technology', card.getAttribute('role'), 'status');
tickTurnCards(box, started + 75000);
eq('the time ticks in place', text(card.querySelector('.turn-elapsed')), '1m 15s');
status(agent, { state: 'working', startedAt: started, owner: me });
[card] = cards();
eq('an update without a step keeps the step shown', text(card.querySelector('.turn-step')), 'shell');

// Stop: for the agent's owner and the channel's admins, no one else.
eq('the owner may stop it', stop(card)?.getAttribute('aria-label'), 'Stop helper\'s turn');
stop(card).click();
eq('Stop asks to stop the turn, once', [stops, stop(card).disabled], [[ask.id], true]);
eq('a channel admin may stop it', !!stop(cards({ ...app, me: admin })[0]), true);
eq('anyone else may not', stop(cards({ ...app, me: stranger })[0]), null);

// Waiting for an approval the agent asked for on this message.
const req = event(K.approvalRequest, agent, 'run rm -rf build?', [['h', ch], ['e', ask.id], ['option', 'allow_once'], ['option', 'reject_once']]);
s.add(req);
[card] = cards();
eq('waiting for approval', [card.dataset.state, text(card.querySelector('.turn-what'))], ['approval', 'helper is waiting for approval']);
// Anyone may sign a grant naming the request; only the answer the
// agent's harness signs (having checked who answered) ends the wait.
s.add(event(K.approvalGrant, stranger, 'allow_once', [['h', ch], ['e', req.id]]));
eq('a grant signed by someone else: still waiting', cards()[0].dataset.state, 'approval');
s.add(event(K.approvalGrant, agent, 'allow_once', [['h', ch], ['e', req.id], ['p', me]]));
[card] = cards();
eq('answered: working again', card.dataset.state, 'working');

// Two agents on one message: a card each.
status(other, { state: 'seen', owner: hex('someone') });
eq('a card per agent', cards().map((c) => [c.dataset.agent === agent ? 'helper' : 'scout', c.dataset.state]), [['helper', 'working'], ['scout', 'seen']]);

// The end of a turn: its final line, no dots, time or Stop.
status(agent, { state: 'done', owner: me });
[card] = cards();
eq('done', [text(card), card.querySelector('.dots, .turn-elapsed, .turn-stop, .turn-step')], ['helper finished', null]);
status(agent, { state: 'failed', cause: 'the model refused the request', owner: me });
eq('failed, with why', text(cards()[0]), 'helper failed: the model refused the request');
status(agent, { state: 'cancelled', by: me, owner: me });
eq('stopped, by whom', text(cards()[0]), 'helper\'s turn was stopped by Me');
// An older status that arrives late does not bring the card back.
s.ephemeral(event(K.turnStatus, agent, JSON.stringify({ at: 1, turn: 't1', state: 'working', owner: me }), [['h', ch], ['e', ask.id]]));
eq('a late older status changes nothing', cards()[0].dataset.state, 'cancelled');

// In the feed the card shows under its message, and the message is
// redrawn when its card changes (its signature holds the turn states).
const ask2 = event(K.stream, me, '@helper and this', [['h', ch], ['p', agent]]);
s.add(ask2);
const feed = document.createElement('div');
document.body.append(feed);
const cache = new Map();
const draw = () => renderFeed(feed, s.channelMessages(ch, { top: true }).filter((e) => e.id === ask2.id), app, cache);
const cardIn = () => feed.querySelector(`article[data-id="${ask2.id}"] .turn-card`);
draw();
eq('no status: no card in the feed', cardIn(), null);
s.ephemeral(event(K.turnStatus, agent, JSON.stringify({ at: ++at, turn: 't2', state: 'working', startedAt: Date.now(), step: 'read_file', owner: me }), [['h', ch], ['e', ask2.id]]));
draw();
eq('working in the feed', [cardIn()?.dataset.state, text(cardIn()?.querySelector('.turn-step'))], ['working', 'read_file']);
s.ephemeral(event(K.turnStatus, agent, JSON.stringify({ at: ++at, turn: 't2', state: 'done', owner: me }), [['h', ch], ['e', ask2.id]]));
draw();
eq('done in the feed', cardIn()?.dataset.state, 'done');
