// Table checks of the workflows panel's model (workflows.js) under node,
// run by TestWorkflowsModule. Input: the js directory. Output: {checked, failures}.
import { mod, eq, report } from './tables.mjs';

const { defSummary, triggerText, parseRun, mayApprove, mayCancel, errorAt, offsetOf, took, tokenHash, going } = await mod('workflows.js');

const me = 'a'.repeat(64), pub = 'b'.repeat(64), other = 'c'.repeat(64);
const def = (content) => ({ kind: 30620, pubkey: pub, tags: [['d', 'w1'], ['h', 'ch']], content, created_at: 1 });

let d = defSummary(def('name: "daily standup"\ntrigger:\n  on: schedule\n  cron: "0 9 * * 1-5"   # weekdays\n  timezone: Europe/Berlin\nsteps: []\n'));
eq('definition: name unquoted, trigger, cron without its comment', [d.name, d.on, d.cron, d.address], ['daily standup', 'schedule', '0 9 * * 1-5', `30620:${pub}:w1`]);
eq('schedule in words', triggerText(d), 'On a schedule (0 9 * * 1-5)');
d = defSummary(def('name: deploy\ntrigger: {on: manual}\nsteps: []\n'));
eq('flow-style trigger', [d.name, triggerText(d)], ['deploy', 'Run by hand']);
eq('no name', defSummary(def('trigger: {on: reaction_added}\n')).name, 'Untitled workflow');
eq('reaction trigger', triggerText(defSummary(def('trigger: {on: reaction_added}\n'))), 'On a reaction');

const runEv = (st) => ({ kind: 30622, content: JSON.stringify(st) });
eq('run: not JSON', parseRun({ content: '{' }), null);
eq('run: no steps', parseRun(runEv({ run: 'r' })), null);
const waiting = parseRun(runEv({
  run: 'r1', workflow: `30620:${pub}:w1`, publisher: pub, status: 'waiting', step: 0, started: 100,
  trigger: { author: me }, steps: [{ id: 'gate', action: 'request_approval', status: 'running', token: 't', approvers: ['owner'] }, { id: 'post', action: 'send_message', status: 'pending', output: 42 }],
}));
eq('run fields', [waiting.run, waiting.status, waiting.steps.length, waiting.steps[1].output, going(waiting)], ['r1', 'waiting', 2, '', true]);
const gate = waiting.steps[0];
eq('owner may approve', mayApprove(waiting, gate, pub, false), true);
eq('another member may not', mayApprove(waiting, gate, other, false), false);
eq('an admin may not when only the owner is named', mayApprove(waiting, gate, other, true), false);
gate.approvers = ['admins', other];
eq('admins: an admin may', mayApprove(waiting, gate, me, true), true);
eq('named pubkey may', mayApprove(waiting, gate, other, false), true);
eq('a step that is not waiting has no buttons', mayApprove({ ...waiting, status: 'running' }, gate, other, false), false);
eq('nobody signed in', mayApprove(waiting, gate, '', true), false);
eq('cancel: publisher', mayCancel(waiting, pub, false), true);
eq('cancel: admin', mayCancel(waiting, me, true), true);
eq('cancel: member', mayCancel(waiting, other, false), false);
eq('cancel: ended run', mayCancel({ ...waiting, status: 'succeeded' }, pub, false), false);

eq('refusal with a line', errorAt('invalid: workflow line 5, column 13: step "a": unknown action'), { line: 5, column: 13, msg: 'step "a": unknown action' });
eq('refusal of the whole text', errorAt('invalid: workflow: empty definition'), { line: 0, column: 0, msg: 'empty definition' });
eq('another refusal', errorAt('restricted: not a channel member'), null);
const text = 'name: x\ntrigger: {on: manual}\nsteps:\n  - id: a\n    action: send_mesage\n';
const at = offsetOf(text, 5, 13);
eq('offset of line 5, column 13', text.slice(at.start, at.end), 'send_mesage');
eq('offset past the end', offsetOf('a\nb', 9, 1).start === 3, true);
eq('durations', [took(10, 14), took(10, 135), took(0, 5), took(100, 3800 + 100)], ['4 s', '2 min 5 s', '', '1 h 3 min']);
eq('token hash is the SHA-256 of the token', tokenHash('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
report();
