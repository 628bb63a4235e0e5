// The turn card under a message an agent is handling: its state, the
// time it has worked (ticking), the current step, a Stop button for the
// agent's owner and the channel's admins, and the final line once the
// turn ended. Built from turns.js's statuses; the tick updates the time
// in place, without a re-render.

import { el } from './util.js';
import { describe, elapsed, finalStates, mayStop } from './turns.js';
import { duration } from './transcript.js';

// openSteps remembers which cards' transcripts the person opened, so a
// re-render (a new step) keeps them open: message id|agent.
const openSteps = new Set();

/**
 * steps is the owner's view of a turn's tool calls, from the agent's
 * decrypted observer frames: one line each (title, state, time), the
 * input and output below, folded until opened.
 */
function steps(tr, key) {
  const d = el('details', { class: 'turn-transcript' });
  if (openSteps.has(key)) d.open = true;
  d.addEventListener('toggle', () => { if (d.open) openSteps.add(key); else openSteps.delete(key); });
  const n = tr.calls.length + tr.dropped;
  d.append(el('summary', { text: n === 1 ? '1 step' : `${n} steps` }));
  const list = el('ol', { class: 'turn-steps' });
  for (const c of tr.calls) {
    const li = el('li', { class: 'turn-call status-' + c.status, 'data-call': c.id });
    const head = el('p', { class: 'turn-call-head' });
    head.append(el('span', { class: 'turn-call-title', text: c.title || c.kind || c.id }), ' · ', el('span', { class: 'turn-call-status', text: c.status }));
    const took = duration(c);
    if (took) head.append(' · ', el('span', { class: 'turn-call-time', text: took }));
    li.append(head);
    if (c.input) li.append(el('pre', { class: 'turn-call-input', text: c.input }));
    if (c.output) li.append(el('pre', { class: 'turn-call-output', text: c.output }));
    list.append(li);
  }
  if (tr.dropped) list.append(el('li', { class: 'turn-call-more', text: `${tr.dropped} more not shown` }));
  d.append(list);
  return d;
}

/** transcriptSignature is what the owner's transcripts of ev's turns add to its rendering. */
export function transcriptSignature(ev, store) {
  return store.turns.of(ev.id).map((st) => {
    const tr = store.transcriptOf(st.agent, ev.id);
    return tr ? tr.calls.map((c) => c.id + c.status + c.endedMs + c.input.length + ',' + c.output.length).join(';') + tr.dropped : '';
  }).join('|');
}

/**
 * turnCards renders the cards of message ev, or null when no agent said
 * anything about it. app: {store, me, stopTurn(ev)}.
 */
export function turnCards(ev, app) {
  const { store } = app;
  const list = store.turns.of(ev.id);
  if (!list.length) return null;
  const ch = ev.tags.find((t) => t[0] === 'h')?.[1] || '';
  const box = el('div', { class: 'turn-cards' });
  for (const st of list) {
    const final = finalStates.has(st.state);
    const waiting = st.state === 'working' && store.waitingApproval(ev.id, st.agent);
    const state = waiting ? 'approval' : st.state;
    const card = el('div', { class: 'turn-card state-' + state, role: 'status', 'data-state': state, 'data-agent': st.agent });
    const line = el('p', { class: 'turn-line' });
    if (!final) line.append(el('span', { class: 'dots', 'aria-hidden': 'true' }));
    line.append(el('span', { class: 'turn-what', text: describe(st, (pk) => store.name(pk), waiting) }));
    if (st.state === 'working' && st.startedAt) {
      line.append(' · ', el('time', { class: 'turn-elapsed', 'data-started': String(st.startedAt), text: elapsed(Date.now() - st.startedAt) }));
    }
    card.append(line);
    const owner = store.ownerOf(st.agent);
    if (mayStop(st, app.me, owner, store.isAdmin(ch, app.me))) {
      card.append(el('button', { type: 'button', class: 'turn-stop', text: 'Stop', 'aria-label': 'Stop ' + store.name(st.agent) + "'s turn",
        onclick: (e) => { e.currentTarget.disabled = true; app.stopTurn(ev); } }));
    }
    if (st.state === 'working' && st.step) card.append(el('p', { class: 'turn-step', text: st.step }));
    const tr = store.transcriptOf(st.agent, ev.id);
    if (tr && (tr.calls.length || tr.dropped)) card.append(steps(tr, ev.id + '|' + st.agent));
    box.append(card);
  }
  return box;
}

/** tickTurnCards moves the working time of every card under root on. */
export function tickTurnCards(root, now = Date.now()) {
  for (const t of root.querySelectorAll('.turn-elapsed[data-started]')) {
    const s = elapsed(now - Number(t.dataset.started));
    if (t.textContent !== s) t.textContent = s;
  }
}
