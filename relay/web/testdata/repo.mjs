// Checks the page's pull request module (static/js/repo.js) under node:
// a pull request's state follows its newest status and update, comments
// are filed under the pull request they name (once), the repository is
// read from the a tag only in the relay's form, and a diff splits into
// files with their counts (a large one collapsed, rendered lazily); and
// the repository view's module (static/js/repoview.js): the relay's
// announcements by channel, and what a commit's signature is called.
// Prints "ok" or the failures, one a line, and exits 1 on any.
// Input: argv[2] = the static/js directory.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.argv[2];
const { PRIndex, prK, repoOf, parseDiff } = await import(pathToFileURL(path.join(dir, 'repo.js')).href);

const fails = [];
const check = (what, got, want) => { if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`); };
const hex = (c) => c.repeat(64);
const relay = hex('e'), owner = hex('b');
const pr = { id: hex('1'), kind: prK.pr, pubkey: hex('a'), created_at: 100, content: 'why', tags: [['a', `30617:${hex('f')}:${owner}/proj`], ['c', 'c1'.repeat(20)], ['branch-name', 'fix'], ['subject', 'Fix']] };
const idx = new PRIndex();
check('fresh state', idx.state(pr).status, 'open');
check('fresh tip', idx.state(pr).tip, 'c1'.repeat(20));
idx.add({ id: hex('2'), kind: prK.update, pubkey: relay, created_at: 101, content: '', tags: [['E', pr.id], ['c', 'c2'.repeat(20)]] });
check('tip after an update', idx.state(pr).tip, 'c2'.repeat(20));
idx.add({ id: hex('3'), kind: prK.draft, pubkey: pr.pubkey, created_at: 102, content: '', tags: [['e', pr.id, '', 'root']] });
check('draft', idx.state(pr).status, 'draft');
idx.add({ id: hex('4'), kind: prK.open, pubkey: pr.pubkey, created_at: 103, content: '', tags: [['e', pr.id, '', 'root']] });
check('open again', idx.state(pr).status, 'open');
const c = { id: hex('5'), kind: prK.comment, pubkey: owner, created_at: 104, content: 'nit', tags: [['E', pr.id], ['K', '1618'], ['e', pr.id], ['buzz-review', 'approve']] };
check('a comment is filed', idx.add(c), true);
check('once', idx.add(c), false);
check('comments', idx.state(pr).comments.map((x) => x.id), [c.id]);
check('a comment naming nothing', idx.add({ id: hex('6'), kind: prK.comment, pubkey: owner, created_at: 1, content: '', tags: [] }), false);
idx.add({ id: hex('7'), kind: prK.merged, pubkey: owner, created_at: 105, content: '', tags: [['e', pr.id, '', 'root'], ['merge-commit', 'c2'.repeat(20)]] });
check('merged', idx.state(pr).status, 'merged');

check('repo', repoOf(pr), { owner, name: 'proj' });
check('a foreign address', repoOf({ tags: [['a', `30617:${hex('f')}:proj`]] }), null);
check('a traversal', repoOf({ tags: [['a', `30617:${hex('f')}:${owner}/../x`]] }), null);

const diff = 'diff --git a/A b/A\nindex 1..2 100644\n--- a/A\n+++ b/A\n@@ -1 +1,2 @@\n-x\n+y\n+z\ndiff --git a/dir/B b/dir/B\n--- a/dir/B\n+++ b/dir/B\n@@ -1 +1 @@\n-1\n+2\n';
const files = parseDiff(diff);
check('files', files.map((f) => [f.path, f.adds, f.dels]), [['A', 2, 1], ['dir/B', 1, 1]]);
check('nothing before the first file', parseDiff('junk\n').length, 0);
let big = '';
for (let i = 0; i < 500; i++) big += `diff --git a/f${i} b/f${i}\n--- a/f${i}\n+++ b/f${i}\n@@ -1,10 +1,10 @@\n` + '+l\n'.repeat(10);
const t0 = performance.now();
check('5 000 changed lines in 500 files', parseDiff(big).reduce((n, f) => n + f.adds, 0), 5000);
const ms = performance.now() - t0;
if (ms > 250) fails.push(`parsing a 5 000-line diff took ${ms.toFixed(0)} ms`);

// The repository view's module: the relay's announcements by channel, the
// signature words, sizes.
globalThis.location = { origin: 'http://relay.test' };
const { RepoIndex, signatureWords, bytes } = await import(pathToFileURL(path.join(dir, 'repoview.js')).href);
const repos = new RepoIndex();
const ann = (pubkey, d, ch, at, extra = []) => ({ id: hex('9'), kind: 30617, pubkey, created_at: at, content: '', tags: [['d', d], ['buzz-channel', ch], ...extra] });
const ch = '7a1c2d4e-3333-4000-8000-0000000000ef';
check('the relay\'s announcement', repos.add(ann(relay, `${owner}/proj`, ch, 10, [['clone', 'http://relay.test/git/x/proj.git'], ['description', 'd']]), relay), true);
check('an older one is not taken', repos.add(ann(relay, `${owner}/proj`, 'other', 9), relay), false);
check('another signer\'s is not taken', repos.add(ann(owner, `${owner}/evil`, ch, 11), relay), false);
check('the owner\'s own form (d = name) is not taken', repos.add(ann(relay, 'proj', ch, 12), relay), false);
check('in the channel', repos.inChannel(ch).map(({ ann, ...r }) => ({ ...r, ann: ann.id })), [{ owner, name: 'proj', description: 'd', clone: 'http://relay.test/git/x/proj.git', ann: hex('9') }]);
check('in no other channel', repos.inChannel('other'), []);
const names = (pk) => (pk === owner ? 'Ada' : pk.slice(0, 4));
check('signed', signatureWords({ status: 'signed', signer: owner, oa_status: 'none' }, names), ['signed', 'signed by Ada', '']);
check('signed for an owner', signatureWords({ status: 'signed', signer: hex('c'), owner, oa_status: 'valid' }, names), ['signed', 'signed by cccc for Ada', '']);
check('invalid', signatureWords({ status: 'invalid', signer: owner, reason: 'the signature does not match the commit' }, names), ['invalid', 'invalid signature', 'the signature does not match the commit']);
check('unsigned', signatureWords({ status: 'unsigned' }, names), ['unsigned', 'unsigned', '']);
check('unknown', signatureWords({ status: 'unknown', reason: 'OpenPGP' }, names)[1], 'signed, not checked');
check('bytes', [bytes(1), bytes(500), bytes(2048), bytes(1 << 20), bytes(30 << 20)], ['1 byte', '500 bytes', '2.0 KiB', '1.0 MiB', '30 MiB']);

// The new pull request form's event: the tags buzz pr create writes.
const { prTemplate, splitLabels } = await import(pathToFileURL(path.join(dir, 'prform.js')).href);
const shared = { owner, name: 'proj', ann: ann(relay, `${owner}/proj`, ch, 10, [['clone', 'http://relay.test/git/x/proj.git'], ['r', hex('1'), 'euc'], ['h', ch]]) };
check('the pull request', prTemplate(shared, { head: 'feat', base: 'main', tip: hex('2').slice(0, 40), title: 'T', description: 'D', labels: ['ui'] }), {
  kind: 1618, content: 'D',
  tags: [['a', `30617:${relay}:${owner}/proj`], ['p', owner], ['r', hex('1'), 'euc'], ['h', ch], ['subject', 'T'], ['c', hex('2').slice(0, 40)],
    ['branch-name', 'feat'], ['buzz-base', 'main'], ['clone', 'http://relay.test/git/x/proj.git'], ['t', 'ui']],
});
check('labels', splitLabels(' bug, ui,,bug , '), ['bug', 'ui']);

if (fails.length) { console.log(fails.join('\n')); process.exit(1); }
console.log('ok');
