// An agent's permission request as a card: who asks, the tool, the
// command or the diff, and, for the agent's owner and the channel's
// admins, the agent's options as buttons; anyone else sees it waiting.
// Its state is the answer the agent's harness signs when it closes the
// request (the one it accepted, or the rejection of one nobody answered):
// an answer anyone else signs may come from someone who may not answer.

import { el, fullTime } from './util.js';
import { tag, tags } from './event.js';
import { K } from './store.js';

/** optionWords are the buttons' words by ACP option kind. */
export const optionWords = { allow_once: 'Allow once', allow_always: 'Allow for this session', reject_once: 'Reject', reject_always: 'Always reject' };

/** isPermissionRequest tells an agent's request (it names options) from a workflow step's approval request. */
export function isPermissionRequest(ev) {
  return ev.kind === K.approvalRequest && ev.tags.some((t) => t[0] === 'option' && t[1]);
}

/** requestOptions lists a request's options: [{id, kind, name}]. */
export function requestOptions(ev) {
  return ev.tags.filter((t) => t[0] === 'option' && t[1] && t[2]).map((t) => ({ id: t[1], kind: t[2], name: t[3] || '' }));
}

/**
 * approvalState says where a request stands: {state: pending, answered,
 * timeout, cancelled or expired; allowed; option (its kind); by}.
 */
export function approvalState(store, ev, now = Date.now() / 1000) {
  const closes = store.answersOf(ev.id).filter((a) => a.pubkey === ev.pubkey);
  closes.sort((a, b) => a.created_at - b.created_at);
  const c = closes[0];
  if (c) {
    const reason = tag(c, 'reason');
    const opt = requestOptions(ev).find((o) => o.id === tag(c, 'option'));
    return {
      state: reason === 'answered' ? 'answered' : reason === 'cancelled' ? 'cancelled' : 'timeout',
      allowed: c.kind === K.approvalGrant, option: opt ? opt.kind : '', by: tag(c, 'by') || '',
    };
  }
  const exp = Number(tag(ev, 'expires'));
  if (exp && now > exp) return { state: 'expired', allowed: false, option: '', by: '' };
  return { state: 'pending', allowed: false, option: '', by: '' };
}

/**
 * mayAnswer reports whether me may answer ev: the agent's owner (named by
 * the request, which the agent signs, or by the agent's attestation) or
 * an owner or admin of the channel. The harness checks it again.
 */
export function mayAnswer(store, ev, me) {
  const owner = store.ownerOf(ev.pubkey);
  return Boolean(me) && (me === owner || tags(ev, 'p').includes(me) || store.isAdmin(tag(ev, 'h'), me));
}

/** pendingUnder counts the pending requests in the thread of root. */
export function pendingUnder(store, ch, root) {
  let n = 0;
  for (const ev of store.channelMessages(ch, { root })) if (isPermissionRequest(ev) && approvalState(store, ev).state === 'pending') n++;
  return n;
}

/** approvalSignature is what a request's card (or a root's notice of one) depends on. */
export function approvalSignature(store, ev, me) {
  if (isPermissionRequest(ev)) return JSON.stringify([approvalState(store, ev), mayAnswer(store, ev, me)]);
  return String(pendingUnder(store, tag(ev, 'h') || '', ev.id));
}

/** stateWords says an answered or closed request's outcome. */
function stateWords(store, st) {
  switch (st.state) {
    case 'answered': return `${st.allowed ? '✅' : '⛔'} ${optionWords[st.option] || (st.allowed ? 'Allowed' : 'Rejected')} by ${st.by ? store.name(st.by) : 'a person'}`;
    case 'cancelled': return '⏹ Cancelled: the turn ended before anyone answered';
    default: return '⛔ Rejected: nobody answered in time';
  }
}

/**
 * approvalCard renders request ev. app: {store, me, answerApproval(ev,
 * option) → Promise}.
 */
export function approvalCard(ev, app) {
  const { store } = app;
  const st = approvalState(store, ev);
  const box = el('div', { class: 'approval', 'data-state': st.state, role: 'group', 'aria-label': 'Permission request' });
  box.append(el('p', { class: 'approval-head' }, el('span', { class: 'badge warn', text: 'permission' }), ' ',
    `${store.name(ev.pubkey)} asks to use ${tag(ev, 'tool') || 'a tool'}`));
  const command = tag(ev, 'command');
  if (command) box.append(el('pre', { class: 'approval-command' }, el('code', { text: command })));
  const diff = ev.tags.find((t) => t[0] === 'diff');
  if (diff) box.append(el('p', { class: 'approval-path', text: diff[1] || '' }), el('pre', { class: 'approval-diff' }, el('code', { text: diff[2] || '' })));
  const rule = tag(ev, 'rule');
  if (rule) box.append(el('p', { class: 'hint', text: `It matches the approval rule “${rule}”.` }));
  if (st.state !== 'pending') {
    box.append(el('p', { class: 'approval-outcome', role: 'status', text: stateWords(store, st) }));
    return box;
  }
  const exp = Number(tag(ev, 'expires'));
  const until = exp ? ` Unanswered, it is rejected at ${fullTime(exp)}.` : '';
  if (!mayAnswer(store, ev, app.me)) {
    box.append(el('p', { class: 'approval-wait', role: 'status', text: 'Waiting for the owner or a channel admin to answer.' + until }));
    return box;
  }
  const note = el('p', { class: 'approval-note', role: 'status', text: until.trim() });
  const buttons = el('div', { class: 'approval-actions', role: 'group', 'aria-label': 'Answer the request' });
  for (const o of requestOptions(ev)) {
    buttons.append(el('button', {
      type: 'button', class: o.kind.startsWith('allow_') ? 'send' : 'danger', 'data-option': o.id, text: optionWords[o.kind] || o.name || o.id,
      onclick: async () => {
        for (const b of buttons.querySelectorAll('button')) b.disabled = true;
        note.textContent = 'Answer sent; waiting for the agent…';
        try {
          await app.answerApproval(ev, o);
        } catch (e) {
          for (const b of buttons.querySelectorAll('button')) b.disabled = false;
          note.textContent = 'Not sent: ' + (e.message || e);
        }
      },
    }));
  }
  box.append(buttons, note);
  return box;
}

/** approvalNotice is the line on a thread's first message while a request in it waits. */
export function approvalNotice(store, ev, openThread) {
  const n = pendingUnder(store, tag(ev, 'h') || '', ev.id);
  if (!n) return null;
  return el('button', { type: 'button', class: 'link approval-pending', onclick: () => openThread(ev),
    text: `🔐 ${n === 1 ? 'A permission request waits' : n + ' permission requests wait'} in the thread` });
}
