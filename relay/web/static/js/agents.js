// The agents panel: every agent the workspace knows, with its owner,
// model, state (its harness's presence: online, paused, not configured,
// offline), the channels it is in, its running turns, its last error and
// today's usage; the owner pauses and resumes it (kind 20102), a channel's
// admin adds it to or removes it from the open channel. agentRows is the
// model (no DOM, tested under node); AgentsPanel draws it.

import { finalStates } from './turns.js';
import { el, initials, hue } from './util.js';

/** controlKind is the agent control a harness obeys from its owner (frozen with internal/workspace). */
export const controlKind = 20102;

/** stateWords say an agent's state as a person reads it. */
const stateWords = { online: 'Online', away: 'Online', paused: 'Paused', 'not configured': 'Not configured', '': 'Offline' };

/** agentKeys are the agents the store knows: attested, a bot profile, or a bot role in a channel. */
export function agentKeys(store) {
  const keys = new Set(store.agents.keys());
  for (const [pk, p] of store.profiles) if (p.bot) keys.add(pk);
  for (const c of store.channels.values()) for (const [pk, role] of c.members) if (role === 'bot') keys.add(pk);
  return [...keys];
}

/**
 * agentRows is one row per agent, sorted by name: {pk, name, owner,
 * ownerName, state, stateWord, model, tokens, cost, channels: [{id,
 * name}], running, lastError, mayPause, inChannel, mayAdd}. current is the
 * open channel ('' none); admin says whether me runs it.
 */
export function agentRows(store, { me = '', current = '', admin = false, now = Date.now() } = {}) {
  const running = new Map(), errors = new Map();
  for (const per of store.turns.m.values()) {
    for (const st of per.values()) {
      if (!finalStates.has(st.state)) running.set(st.agent, (running.get(st.agent) || 0) + 1);
      else if (st.state === 'failed' && st.cause && (!errors.has(st.agent) || errors.get(st.agent).at < st.at)) errors.set(st.agent, st);
    }
  }
  const rows = agentKeys(store).map((pk) => {
    const p = store.presenceOf(pk);
    const state = store.status(pk, now);
    const owner = store.ownerOf(pk);
    const channels = [...store.channels.values()].filter((c) => c.members.has(pk) && c.name).map((c) => ({ id: c.id, name: c.name }));
    const live = Boolean(state);
    return {
      pk, name: store.name(pk), owner, ownerName: owner ? store.name(owner) : '', state, stateWord: stateWords[state] ?? 'Offline',
      model: live ? p?.model || '' : '', tokens: live ? p?.tokens || 0 : 0, cost: live ? p?.cost ?? null : null,
      channels, running: running.get(pk) || 0, lastError: errors.get(pk)?.cause || '',
      mayPause: Boolean(me) && me === owner && (state === 'online' || state === 'away' || state === 'paused'),
      inChannel: Boolean(current) && Boolean(store.channels.get(current)?.members.has(pk)),
      mayAdd: Boolean(current) && admin,
    };
  });
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

/** usageText says a day's usage: "12,345 tokens today · $0.42". */
export function usageText(tokens, cost) {
  if (!tokens) return 'No usage today';
  return `${tokens.toLocaleString('en-US')} tokens today` + (cost != null ? ` · $${cost.toFixed(2)}` : '');
}

/** AgentsPanel is the dialog that lists the agents. */
export class AgentsPanel {
  constructor(app, dialog, list) {
    this.app = app;
    this.dialog = dialog;
    this.list = list;
    app.store.subscribe(() => { if (this.dialog.open) this.render(); });
  }

  open() {
    this.render();
    this.dialog.showModal();
  }

  render() {
    const app = this.app, s = app.store, current = app.current;
    const admin = Boolean(current) && (s.isAdmin(current, app.me) || app.relayAdmin === true);
    const rows = agentRows(s, { me: app.me, current, admin });
    const chName = current ? s.channels.get(current)?.name || '' : '';
    if (!rows.length) {
      this.list.replaceChildren(el('li', { class: 'empty' }, 'No agents yet. `buzzbox up` starts one; mention it in a channel to put it to work.'));
      return;
    }
    this.list.replaceChildren(...rows.map((r) => {
      const actions = el('div', { class: 'agent-actions' });
      if (r.mayPause) {
        const word = r.state === 'paused' ? 'resume' : 'pause';
        actions.append(el('button', { type: 'button', 'data-action': word, onclick: () => this.control(r.pk, word) }, word === 'pause' ? 'Pause' : 'Resume'));
      }
      if (r.mayAdd) {
        actions.append(r.inChannel
          ? el('button', { type: 'button', class: 'secondary', 'data-action': 'remove', onclick: () => this.member(r.pk, false) }, `Remove from #${chName}`)
          : el('button', { type: 'button', 'data-action': 'add', onclick: () => this.member(r.pk, true) }, `Add to #${chName}`));
      }
      const facts = [
        r.ownerName ? `Owned by ${r.ownerName}` : 'Owner unknown',
        r.model ? `Model ${r.model}` : '',
        usageText(r.tokens, r.cost),
        r.running ? `${r.running} turn${r.running === 1 ? '' : 's'} running` : 'Idle',
      ].filter(Boolean);
      return el('li', { class: 'agent-row', 'data-agent': r.pk, 'data-state': r.state || 'offline' },
        el('span', { class: `avatar h${hue(r.pk)}`, 'aria-hidden': 'true' }, initials(r.name)),
        el('div', { class: 'agent-main' },
          el('p', { class: 'agent-name' }, r.name, ' ', el('span', { class: 'badge' }, 'agent'), ' ',
            el('span', { class: 'agent-state', 'data-part': 'state' }, r.stateWord)),
          el('p', { class: 'agent-facts' }, facts.join(' · ')),
          el('p', { class: 'agent-channels' }, r.channels.length ? 'In ' + r.channels.map((c) => '#' + c.name).join(', ') : 'In no channel'),
          r.lastError ? el('p', { class: 'agent-error', role: 'note' }, 'Last error: ' + r.lastError) : ''),
        actions);
    }));
  }

  async control(pk, word) {
    try {
      await this.app.send({ kind: controlKind, tags: [['p', pk]], content: word });
    } catch (e) { this.app.flash(e); }
  }

  async member(pk, add) {
    const ch = this.app.current;
    try {
      await this.app.send(add
        ? { kind: 9000, tags: [['h', ch], ['p', pk, '', 'bot']], content: '' }
        : { kind: 9001, tags: [['h', ch], ['p', pk]], content: '' });
    } catch (e) { this.app.flash(e); }
  }
}
