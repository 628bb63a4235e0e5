// The first-run guide, shown while no channel is open: create a channel,
// invite a teammate, mention the agent, each step with a button that does
// it and marked done once it is; it can be hidden for good (localStorage).
// An empty channel's feed gets its opening lines from here too: who is in
// it, how to invite, the agent to mention. guideSteps and channelIntro are
// the model (no DOM, run under node by TestGuideModule); Guide and
// introView draw them.

import { el } from './util.js';
import { agentKeys } from './agents.js';

/** myChannels are the named channels (not direct messages) me is in and that stand, by name. */
export function myChannels(store, me) {
  return [...store.channels.values()].filter((c) => c.name && c.type !== 'dm' && c.members.has(me) && !store.gone(c.id))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** inviteTarget is the channel the guide invites to: the open one, else #general, else the first of me's; null when me is in none. */
export function inviteTarget(store, me, current = '') {
  const mine = myChannels(store, me);
  return mine.find((c) => c.id === current) || mine.find((c) => c.name === 'general') || mine[0] || null;
}

/** mentionedAgent reports whether me has written a message that tags an agent, in a channel of theirs. */
function mentionedAgent(store, me, channels, agents) {
  for (const c of channels) {
    for (const id of store.messages.get(c.id) || []) {
      const ev = store.events.get(id);
      if (ev?.pubkey === me && ev.tags.some((t) => t[0] === 'p' && agents.has(t[1]))) return true;
    }
  }
  return false;
}

/**
 * guideSteps is the guide's three steps, in order, each {id, done} with
 * what its button needs: channel {name: of me's first channel}; invite
 * {channel, channelName: where to invite ('' none yet), with: a channel
 * someone else is in with me}; agent {agent, agentName ('' none in the
 * workspace), channel, channelName: a channel of me's the agent is in}.
 */
export function guideSteps(store, me, current = '') {
  const mine = myChannels(store, me);
  const agents = agentKeys(store).filter((pk) => pk !== me).sort((a, b) => store.name(a).localeCompare(store.name(b)));
  const isAgent = new Set(agents);
  const target = inviteTarget(store, me, current);
  const shared = mine.find((c) => [...c.members.keys()].some((pk) => pk !== me && !isAgent.has(pk)));
  // The agent to mention: the first in a channel with me (the invite's first), else the first known.
  let agent = '', where = null;
  for (const c of [target, ...mine].filter(Boolean)) {
    agent = agents.find((pk) => c.members.has(pk)) || '';
    if (agent) { where = c; break; }
  }
  agent ||= agents[0] || '';
  return [
    { id: 'channel', done: mine.length > 0, name: mine[0]?.name || '' },
    { id: 'invite', done: Boolean(shared), channel: target?.id || '', channelName: target?.name || '', with: shared?.name || '' },
    {
      id: 'agent', done: mentionedAgent(store, me, mine, isAgent), agent, agentName: agent ? store.name(agent) : '',
      channel: where?.id || '', channelName: where?.name || '',
    },
  ];
}

/** channelIntro is what an empty channel's feed says: {name, people: names, me first as "you", agent, agentName ('' none here), agentsKnown}. */
export function channelIntro(store, me, id) {
  const ch = store.channels.get(id);
  const agents = new Set(agentKeys(store));
  const pks = ch ? [...ch.members.keys()] : [];
  const people = pks.filter((pk) => !agents.has(pk) && pk !== me).map((pk) => store.name(pk)).sort();
  if (ch?.members.has(me)) people.unshift('you');
  const agent = pks.filter((pk) => agents.has(pk) && pk !== me).sort((a, b) => store.name(a).localeCompare(store.name(b)))[0] || '';
  return { name: ch?.name || '', people, agent, agentName: agent ? store.name(agent) : '', agentsKnown: agents.size > 0 };
}

/** hiddenKey is where the guide's dismissal is remembered, per key. */
const hiddenKey = (me) => 'buzz:guide:hidden:' + me;

/** Guide draws the steps into the empty state while no channel is open. */
export class Guide {
  constructor(app, root) {
    this.app = app;
    this.root = root;
    this.hidden = false;
    try { this.hidden = localStorage.getItem(hiddenKey(app.me)) === '1'; } catch { /* no storage: shown each time */ }
  }

  dismiss() {
    this.hidden = true;
    try { localStorage.setItem(hiddenKey(this.app.me), '1'); } catch { /* hidden for this page only */ }
    this.render();
    document.getElementById('new-channel').focus();
  }

  render() {
    const app = this.app;
    if (!app.loaded && !this.hidden) return; // the page's first words stay until the channels are in: no step flips to done
    const steps = this.hidden ? [] : guideSteps(app.store, app.me, app.current);
    const key = this.hidden ? 'hidden' : JSON.stringify(steps);
    if (this.root.dataset.key === key) return;
    this.root.dataset.key = key;
    if (this.hidden) {
      this.root.replaceChildren(el('h2', { text: 'Welcome to buzz' }), el('p', { text: 'Pick a channel on the left, or create one.' }));
      return;
    }
    const first = steps.find((s) => !s.done)?.id;
    this.root.replaceChildren(
      el('h2', { id: 'guide-title', text: 'Welcome to buzz' }),
      el('p', { class: 'guide-lead', text: steps.every((s) => s.done) ? 'Your workspace is set up. Pick a channel on the left.' : 'Three steps get your team, and an agent, working here.' }),
      el('ol', { class: 'guide-steps', 'aria-labelledby': 'guide-title' }, steps.map((s, i) => this.step(s, i + 1, s.id === first))),
      el('button', { type: 'button', class: 'link guide-dismiss', text: 'Hide this guide', onclick: () => this.dismiss() }));
  }

  /** step draws one step: its mark (a number, or ✓ once done), what it is for, and its button. */
  step(s, n, primary) {
    const { title, text, action, act } = this[s.id](s);
    const note = el('p', { class: 'guide-note', role: 'status' });
    const button = action ? el('button', { type: 'button', class: primary ? 'primary' : '', text: action, onclick: () => act(note) }) : null;
    return el('li', { class: 'guide-step', 'data-step': s.id, 'data-done': String(s.done) },
      el('span', { class: 'guide-mark', 'aria-hidden': 'true', text: s.done ? '✓' : String(n) }),
      el('div', { class: 'guide-body' },
        el('h3', {}, title, s.done ? el('span', { class: 'sr-only', text: ' (done)' }) : null),
        el('p', { text }), note),
      button);
  }

  channel(s) {
    return {
      title: 'Create a channel',
      text: s.done ? `You are in #${s.name}. A channel per team, project or topic keeps talk findable.` : 'Channels hold the conversations: one per team, project or topic.',
      action: s.done ? 'Create another' : 'Create a channel',
      act: () => document.getElementById('new-channel').click(),
    };
  }

  invite(s) {
    return {
      title: 'Invite a teammate',
      text: s.done ? `Someone else is in #${s.with} with you. Invite more from a channel's Members.`
        : s.channel ? `Add someone to #${s.channelName}, or make an invite link for someone new.` : 'People are invited to a channel: create one first.',
      action: 'Invite a teammate',
      act: (note) => {
        if (!s.channel) { note.textContent = 'Create or pick a channel first: an invite is to a channel.'; return; }
        openChannel(this.app, s.channel);
        this.app.channelView.openMembers(['tab-invite', 'tab-add']);
      },
    };
  }

  agent(s) {
    if (!s.agent) {
      return { title: 'Mention the agent', text: 'No agent here yet: run “buzzbox up” to start one for this workspace, then mention it in a channel and it answers in the thread.', action: 'Open Agents', act: () => this.app.agentsPanel.open() };
    }
    if (!s.channel) {
      return { title: `Mention @${s.agentName}`, text: `@${s.agentName} is in none of your channels: open a channel, then add it from Agents.`, action: 'Open Agents', act: () => this.app.agentsPanel.open() };
    }
    return {
      title: `Mention @${s.agentName}`,
      text: s.done ? `You have asked @${s.agentName} for help. Mention it in any channel it is in.`
        : `Ask @${s.agentName} something in #${s.channelName}: it answers in the message's thread, and its card shows what it is doing.`,
      action: `Mention @${s.agentName}`,
      act: () => { openChannel(this.app, s.channel); mention(s.agentName); },
    };
  }
}

/** openChannel opens channel id now, not on the hashchange that follows. */
export function openChannel(app, id) {
  if (location.hash !== '#/c/' + id) location.hash = '#/c/' + id;
  app.route();
}

/** mention puts @name at the start of the open channel's message box and focuses it, the cursor after. */
export function mention(name) {
  const area = document.querySelector('#composer-slot textarea');
  if (!area) return;
  const at = '@' + name + ' ';
  if (!area.value.startsWith(at)) area.value = at + area.value;
  area.focus();
  area.setSelectionRange(area.value.length, area.value.length);
}

/** introView draws an empty channel's opening lines; invite and agents are its buttons' actions (null: not offered). */
export function introView(intro, { invite, agents }) {
  const names = [...intro.people, ...(intro.agent ? ['@' + intro.agentName] : [])];
  const who = names.length <= 1 ? 'Only you are here so far.' : `Here: ${names.slice(0, -1).join(', ')} and ${names.at(-1)}.`;
  const agentLine = intro.agent ? `Mention @${intro.agentName} to put it to work: it answers in the message's thread.`
    : intro.agentsKnown ? 'No agent in this channel yet: add one from Agents.' : 'No agent in this workspace yet: “buzzbox up” starts one.';
  return el('div', { class: 'feed-intro' },
    el('h3', { text: `This is the start of #${intro.name}` }),
    el('p', { text: who }),
    el('p', { text: agentLine }),
    el('div', { class: 'row' },
      invite ? el('button', { type: 'button', text: 'Invite people', onclick: invite }) : null,
      intro.agent ? el('button', { type: 'button', text: `Mention @${intro.agentName}`, onclick: () => mention(intro.agentName) }) : null,
      !intro.agent && intro.agentsKnown && agents ? el('button', { type: 'button', text: 'Open Agents', onclick: agents }) : null));
}
