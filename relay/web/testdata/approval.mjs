// Checks the page's approval module (static/js/approval.js) under node:
// a request's state comes from the agent's own closing answer only, who
// may answer, and which requests are permission requests. Prints "ok" or
// the failures, one a line, and exits 1 on any.
// Input: argv[2] = the static/js directory.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.argv[2];
const { Store, K } = await import(pathToFileURL(path.join(dir, 'store.js')).href);
const { approvalState, mayAnswer, isPermissionRequest, requestOptions, pendingUnder } = await import(pathToFileURL(path.join(dir, 'approval.js')).href);
globalThis.requestAnimationFrame = () => {};

const fails = [];
const check = (what, got, want) => { if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`); };
const hex = (c) => c.repeat(64);
const agent = hex('a'), owner = hex('b'), admin = hex('c'), member = hex('d'), ch = '6f1c2d4e-1111-4000-8000-0000000000ab';
const root = { id: hex('1'), kind: K.stream, pubkey: owner, created_at: 100, tags: [['h', ch], ['p', agent]], content: 'go' };
const now = Math.floor(Date.now() / 1000);
const req = {
  id: hex('2'), kind: K.approvalRequest, pubkey: agent, created_at: 101, content: '',
  tags: [['h', ch], ['e', root.id, '', 'reply'], ['p', owner], ['tool', 'shell'], ['command', 'git push'],
    ['option', 'ok', 'allow_once', 'Allow'], ['option', 'all', 'allow_always', 'Always'], ['option', 'no', 'reject_once', 'Reject'], ['expires', String(now + 600)]],
};
const s = new Store();
s.add({ id: hex('3'), kind: K.groupMembers, pubkey: hex('f'), created_at: 1, content: '', tags: [['d', ch], ['p', admin, '', 'admin'], ['p', member, '', 'member'], ['p', agent, '', 'member']] });
s.add(root);
s.add(req);
check('a permission request', isPermissionRequest(req), true);
check('a workflow step request', isPermissionRequest({ ...req, tags: [['h', ch]] }), false);
check('options', requestOptions(req).map((o) => o.id + '/' + o.kind), ['ok/allow_once', 'all/allow_always', 'no/reject_once']);
check('pending', approvalState(s, req, now).state, 'pending');
check('pending in the thread', pendingUnder(s, ch, root.id), 1);
check('expired', approvalState(s, req, now + 601).state, 'expired');
check('the owner may answer', mayAnswer(s, req, owner), true);
check('an admin may answer', mayAnswer(s, req, admin), true);
check('a member may not', mayAnswer(s, req, member), false);
check('nobody signed in may not', mayAnswer(s, req, ''), false);
// A member's grant is no answer: only the agent's closing answer counts.
s.add({ id: hex('4'), kind: K.approvalGrant, pubkey: member, created_at: 102, content: '', tags: [['h', ch], ['e', req.id], ['p', agent], ['option', 'ok']] });
check('after a member grant', approvalState(s, req, now).state, 'pending');
s.add({ id: hex('5'), kind: K.approvalDeny, pubkey: agent, created_at: 103, content: '',
  tags: [['h', ch], ['e', req.id], ['reason', 'answered'], ['option', 'no'], ['by', owner]] });
check('after the agent closes it', approvalState(s, req, now), { state: 'answered', allowed: false, option: 'reject_once', by: owner });
check('none pending', pendingUnder(s, ch, root.id), 0);
const late = { ...req, id: hex('6') };
s.add(late);
s.add({ id: hex('7'), kind: K.approvalDeny, pubkey: agent, created_at: 104, content: '', tags: [['h', ch], ['e', late.id], ['reason', 'timeout'], ['option', 'no']] });
check('timed out', approvalState(s, late, now).state, 'timeout');
if (fails.length) { console.log(fails.join('\n')); process.exit(1); }
console.log('ok');
