// Turn status: what an agent's harness says about its turn on a message
// (kind 20100, ephemeral, h = channel, e = each message the turn
// handles), folded into the newest state per message and agent, and the
// words a turn card shows. No DOM here: turncard.js draws the card.

/** turnKinds are the kinds a turn card reads and sends. */
export const turnKinds = { status: 20100, stop: 20101, approvalRequest: 46010, approvalGrant: 46030, approvalDeny: 46031 };

/** states a harness sends (frozen with harness/turnstatus.go). */
const states = new Set(['queued', 'seen', 'working', 'done', 'failed', 'cancelled']);

/** finalStates end a turn; the card keeps its last line. */
export const finalStates = new Set(['done', 'failed', 'cancelled']);

// maxStep and maxCause bound what a card shows of a harness's text.
const maxStep = 200, maxCause = 500;

const hex64 = /^[0-9a-f]{64}$/;
const str = (v, n) => (typeof v === 'string' ? v.slice(0, n) : '');
const num = (v) => (Number.isFinite(v) && v > 0 ? v : 0);

/**
 * parseStatus reads a turn status event: {agent, ids, state, at,
 * startedAt, step, cause, by, owner, turn}, or null when it is not one.
 */
export function parseStatus(ev) {
  if (!ev || ev.kind !== turnKinds.status) return null;
  let c;
  try { c = JSON.parse(ev.content); } catch { return null; }
  if (!c || typeof c !== 'object' || !states.has(c.state)) return null;
  const ids = ev.tags.filter((t) => t[0] === 'e' && hex64.test(t[1] || '')).map((t) => t[1]);
  if (!ids.length) return null;
  return {
    agent: ev.pubkey, ids, state: c.state, at: num(c.at) || ev.created_at * 1000, startedAt: num(c.startedAt),
    step: str(c.step, maxStep), cause: str(c.cause, maxCause), by: hex64.test(c.by || '') ? c.by : '',
    owner: hex64.test(c.owner || '') ? c.owner : '', turn: str(c.turn, 64),
  };
}

/** TurnBook keeps the newest status of each message per agent. */
export class TurnBook {
  constructor() { this.m = new Map(); } // message id → Map agent → status

  /** add takes one status event and reports whether a card changes. */
  add(ev) {
    const st = parseStatus(ev);
    if (!st) return false;
    let changed = false;
    for (const id of st.ids) {
      if (!this.m.has(id)) this.m.set(id, new Map());
      const per = this.m.get(id);
      const old = per.get(st.agent);
      if (old && old.at > st.at) continue;
      // A working update carries the start of its turn; a later one
      // without a step keeps the step shown until the next.
      const next = { ...st };
      if (old && old.state === 'working' && st.state === 'working' && old.turn === st.turn && !st.step) next.step = old.step;
      per.set(st.agent, next);
      changed = true;
    }
    return changed;
  }

  /** of lists the statuses of message id, one per agent. */
  of(id) { return [...(this.m.get(id)?.values() || [])]; }
}

/** elapsed formats a duration in ms as 9s, 1m 05s or 1h 02m. */
export function elapsed(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return s + 's';
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

/**
 * describe is a card's state line: who, what, and for a final state how it
 * ended. name(pk) names a key; waiting says an approval request of the
 * agent's on this message is unanswered.
 */
export function describe(st, name, waiting = false) {
  const who = name(st.agent);
  if (st.state === 'working' && waiting) return `${who} is waiting for approval`;
  switch (st.state) {
    case 'queued': return `${who} has this queued`;
    case 'seen': return `${who} has seen this`;
    case 'working': return `${who} is working on this`;
    case 'done': return `${who} finished`;
    case 'failed': return `${who} failed` + (st.cause ? ': ' + st.cause : '');
    case 'cancelled': return `${who}'s turn was stopped` + (st.by ? ' by ' + name(st.by) : '');
  }
  return '';
}

/** mayStop reports whether me may stop st's turn: its owner or an admin of the channel. */
export function mayStop(st, me, owner, admin) {
  return st.state === 'working' || st.state === 'queued' || st.state === 'seen'
    ? Boolean(me) && (me === owner || me === st.owner || admin)
    : false;
}
