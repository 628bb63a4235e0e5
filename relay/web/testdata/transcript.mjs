// Checks the page's transcript module (static/js/transcript.js) under
// node: observer frames fold into a turn's tool calls (title, status,
// duration, input, output) keyed by the triggering message, out of order
// and with duplicates, truncated to the named limits. Prints "ok" or the
// failures, one a line, and exits 1 on any.
// Input: argv[2] = the static/js directory.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.argv[2];
const m = await import(pathToFileURL(path.join(dir, 'transcript.js')).href);
const fails = [];
const check = (what, got, want) => { if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`); };

const msg = 'e'.repeat(64), ses = 'sess-1';
const at = (ms) => new Date(Date.UTC(2026, 0, 1, 0, 0, 0, ms)).toISOString();
const upd = (seq, ms, update, session = ses) => ({ seq, timestamp: at(ms), kind: 'acp_read', agentIndex: 0, payload: { jsonrpc: '2.0', method: 'session/update', params: { sessionId: session, update } } });
const frames = [
  { seq: 1, timestamp: at(0), kind: 'turn_started', sessionId: ses, turnId: 't1', payload: { triggeringEventIds: [msg] } },
  upd(2, 100, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'shell: echo hi', kind: 'execute', status: 'in_progress', rawInput: { command: 'echo hi' } }),
  upd(3, 350, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', content: [{ type: 'content', content: { type: 'text', text: 'hi' } }] }),
  upd(4, 400, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'done' } }),
  upd(5, 500, { sessionUpdate: 'tool_call', toolCallId: 'c2', title: 'read', status: 'in_progress', rawInput: 'x'.repeat(m.MAX_INPUT_CHARS + 10) }),
  upd(6, 600, { sessionUpdate: 'tool_call', toolCallId: 'other', title: 'elsewhere' }, 'sess-2'),
  { seq: 7, timestamp: at(700), kind: 'turn_completed', sessionId: ses, turnId: 't1', payload: { outcome: 'ok' } },
  upd(8, 800, { sessionUpdate: 'tool_call', toolCallId: 'late', title: 'after the turn' }),
];
const tr = new m.Transcripts();
for (const f of [...frames].reverse()) tr.add(f);
check('a duplicate frame', tr.add(frames[2]), false);
const t = tr.turn(msg);
check('calls', t.calls.map((c) => [c.id, c.title, c.status]), [['c1', 'shell: echo hi', 'completed'], ['c2', 'read', 'in_progress']]);
check('input', t.calls[0].input, '{"command":"echo hi"}');
check('output', t.calls[0].output, 'hi');
check('duration', m.duration(t.calls[0]), '250 ms');
check('input truncated', t.calls[1].input.length < m.MAX_INPUT_CHARS + 40 && t.calls[1].input.endsWith('[10 more characters]'), true);
check('done', [t.done, t.outcome], [true, 'ok']);
check('another message', tr.turn('f'.repeat(64)), null);

const big = new m.Transcripts();
big.add(frames[0]);
for (let i = 0; i < m.MAX_TOOL_CALLS + 3; i++) big.add(upd(10 + i, 10 + i, { sessionUpdate: 'tool_call', toolCallId: `k${i}`, title: 't' }));
const b = big.turn(msg);
check('calls kept', b.calls.length, m.MAX_TOOL_CALLS);
check('calls dropped', b.dropped, 3);

// As the harness sends them: the turn starts before its session exists
// (sessionId null); session_resolved names both, the tool calls follow,
// and a second turn in the same session is its own.
const fresh = new m.Transcripts();
const msg2 = 'd'.repeat(64);
for (const f of [
  { seq: 1, timestamp: at(0), kind: 'turn_started', sessionId: null, turnId: 'u1', payload: { triggeringEventIds: [msg] } },
  { seq: 2, timestamp: at(5), kind: 'session_resolved', sessionId: ses, turnId: 'u1', payload: { isNewSession: true } },
  upd(3, 10, { sessionUpdate: 'tool_call', toolCallId: 'a', title: 'shell', status: 'in_progress' }),
  { seq: 4, timestamp: at(20), kind: 'turn_completed', sessionId: ses, turnId: 'u1', payload: { outcome: 'ok' } },
  { seq: 5, timestamp: at(30), kind: 'turn_started', sessionId: null, turnId: 'u2', payload: { triggeringEventIds: [msg2] } },
  { seq: 6, timestamp: at(35), kind: 'session_resolved', sessionId: ses, turnId: 'u2', payload: { isNewSession: false } },
  upd(7, 40, { sessionUpdate: 'tool_call', toolCallId: 'b', title: 'read', status: 'in_progress' }),
]) fresh.add(f);
check('first turn, session named later', fresh.turn(msg)?.calls.map((c) => c.id), ['a']);
check('second turn of the session', fresh.turn(msg2)?.calls.map((c) => c.id), ['b']);
check('second turn running', fresh.turn(msg2)?.done, false);

const many = new m.Transcripts();
for (let i = 0; i < m.MAX_FRAMES + 10; i++) many.add(upd(i + 1, i, { sessionUpdate: 'agent_message_chunk' }));
check('frames kept', many.frames.length, m.MAX_FRAMES);

if (fails.length) { console.log(fails.join('\n')); process.exit(1); }
console.log('ok');
