// The owner's transcript of a turn: folds the harness's decrypted NIP-AO
// observer frames (harness/observer's Frame JSON) into the tool calls of
// each turn, keyed by the message that triggered it. Pure: the page
// decrypts (nip44.js) and renders; this module only folds.

// Limits on what one transcript keeps, so a chatty tool cannot grow the
// page without bound.
export const MAX_TOOL_CALLS = 200; // per turn; later calls are counted, not kept
export const MAX_INPUT_CHARS = 2000; // of a tool call's input shown
export const MAX_OUTPUT_CHARS = 4000; // of a tool call's output shown
export const MAX_FRAMES = 5000; // per agent; past it the oldest go (and with them the oldest turns' transcripts)

/** clip shortens s to at most n characters, saying how many it dropped. */
export function clip(s, n) {
  if (s.length <= n) return s;
  return s.slice(0, n) + `… [${s.length - n} more characters]`;
}

function text(v) {
  if (v == null) return '';
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(text).filter(Boolean).join('\n');
  if (typeof v === 'object') {
    if (v.type === 'content' && v.content) return text(v.content);
    if (typeof v.text === 'string') return v.text;
    if (v.type === 'diff') return `diff ${v.path || ''}`;
    return JSON.stringify(v);
  }
  return String(v);
}

/**
 * Transcripts folds frames, in any order, into turns. It is fed each
 * frame once (duplicates by seq are dropped) and answers for a
 * triggering event id the turn's tool calls: {id, title, status, kind,
 * input, output, startedMs, endedMs}, oldest first, plus dropped (calls
 * over MAX_TOOL_CALLS) and done.
 */
export class Transcripts {
  constructor() {
    this.seen = new Set();
    this.frames = [];
  }

  /** add takes one decrypted frame (the parsed JSON); it reports whether it was new. */
  add(f) {
    if (!f || typeof f.seq !== 'number' || this.seen.has(f.seq)) return false;
    this.seen.add(f.seq);
    this.frames.push(f);
    if (this.frames.length > MAX_FRAMES) {
      this.frames.sort((a, b) => a.seq - b.seq);
      for (const old of this.frames.splice(0, this.frames.length - MAX_FRAMES)) this.seen.delete(old.seq);
    }
    this.dirty = true;
    return true;
  }

  fold() {
    if (!this.dirty) return this.turns;
    this.dirty = false;
    this.frames.sort((a, b) => a.seq - b.seq);
    const turns = new Map(); // triggering event id → turn
    const open = new Map(); // ACP session id → the turn running in it
    const byTurn = new Map(); // harness turn id → turn
    for (const f of this.frames) {
      const p = f.payload || {};
      // A turn starts before its session is known (a new one is made for
      // it): its later frames (session_resolved, …) carry both ids.
      if (f.kind !== 'turn_started' && f.sessionId && f.turnId && byTurn.has(f.turnId) && !byTurn.get(f.turnId).done) open.set(f.sessionId, byTurn.get(f.turnId));
      if (f.kind === 'turn_started') {
        const t = { calls: [], byId: new Map(), dropped: 0, done: false, turnId: f.turnId, startedMs: Date.parse(f.timestamp) };
        if (f.turnId) byTurn.set(f.turnId, t);
        if (f.sessionId) open.set(f.sessionId, t);
        for (const id of p.triggeringEventIds || []) turns.set(id, t);
      } else if (f.kind === 'turn_completed' || f.kind === 'turn_error') {
        const t = (f.turnId && byTurn.get(f.turnId)) || (f.sessionId && open.get(f.sessionId));
        if (t) {
          t.done = true;
          t.outcome = p.outcome || (f.kind === 'turn_error' ? 'error' : '');
          for (const [sid, o] of open) if (o === t) open.delete(sid);
        }
      } else if (f.kind === 'acp_read' && p.method === 'session/update' && p.params) {
        const t = open.get(p.params.sessionId);
        const u = p.params.update || {};
        if (!t || (u.sessionUpdate !== 'tool_call' && u.sessionUpdate !== 'tool_call_update') || !u.toolCallId) continue;
        const at = Date.parse(f.timestamp);
        let c = t.byId.get(u.toolCallId);
        if (!c) {
          if (t.calls.length >= MAX_TOOL_CALLS) { t.dropped++; continue; }
          c = { id: u.toolCallId, title: '', status: 'pending', kind: '', input: '', output: '', startedMs: at, endedMs: null };
          t.byId.set(u.toolCallId, c);
          t.calls.push(c);
        }
        if (u.title) c.title = u.title;
        if (u.kind) c.kind = u.kind;
        if (u.status) c.status = u.status;
        if (u.rawInput !== undefined) c.input = clip(text(u.rawInput), MAX_INPUT_CHARS);
        const out = u.rawOutput !== undefined ? u.rawOutput : u.content;
        if (out !== undefined && text(out)) c.output = clip(text(out), MAX_OUTPUT_CHARS);
        if ((c.status === 'completed' || c.status === 'failed') && c.endedMs == null) c.endedMs = at;
      }
    }
    this.turns = turns;
    return turns;
  }

  /** turn returns the transcript of the turn eventId triggered, or null. */
  turn(eventId) {
    const t = this.fold().get(eventId);
    if (!t) return null;
    return { calls: t.calls.map((c) => ({ ...c })), dropped: t.dropped, done: t.done, outcome: t.outcome || '' };
  }
}

/** duration formats a tool call's run time (ms) for the transcript. */
export function duration(c, now = Date.now()) {
  const ms = (c.endedMs ?? now) - c.startedMs;
  if (!(ms >= 0)) return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}
