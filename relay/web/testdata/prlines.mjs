// Checks the model of comments on a pull request's lines
// (static/js/prlines.js) under node: a file's diff lines are numbered in
// the new file (removed lines and headers get none), comments fall into
// threads by file and line with replies however deep, resolve marks count
// newest first and are not replies, and comments on no line stay apart.
// Prints "ok" or the failures, one a line, and exits 1 on any.
// Input: argv[2] = the static/js directory.
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const dir = process.argv[2];
const { numberLines, lineThreads, threadKey } = await import(pathToFileURL(path.join(dir, 'prlines.js')).href);

const fails = [];
const check = (what, got, want) => { if (JSON.stringify(got) !== JSON.stringify(want)) fails.push(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`); };
const hex = (c) => c.repeat(64);

const file = 'diff --git a/A b/A\nindex 1..2 100644\n--- a/A\n+++ b/A\n@@ -1,3 +1,3 @@\n x\n-y\n+z\n w\n@@ -10 +10,2 @@\n+p\n q\n\\ No newline at end of file\n';
check('numbers', numberLines(file).map((l) => [l.kind, l.n]), [
  ['file', 0], ['file', 0], ['file', 0], ['file', 0], ['hunk', 0], ['ctx', 1], ['del', 0], ['add', 2], ['ctx', 3],
  ['hunk', 0], ['add', 10], ['ctx', 11], ['file', 0]]);
check('a line starting --- inside a hunk is a removal', numberLines('diff --git a/B b/B\n--- a/B\n+++ b/B\n@@ -1,2 +1 @@\n--- x\n+y\n').map((l) => l.kind),
  ['file', 'file', 'file', 'hunk', 'del', 'add']);

const pr = hex('1');
let t = 100;
const c = (id, parent, extra = [], pubkey = hex('a')) => ({ id: hex(id), kind: 1111, pubkey, created_at: t++, content: id, tags: [['E', pr], ['e', parent], ...extra] });
const anchor = [['buzz-file', 'A'], ['buzz-line', '2'], ['buzz-commit', 'c'.repeat(40)]];
const root = c('2', pr, anchor);
const reply = c('3', root.id, anchor, hex('b'));
const deeper = c('4', reply.id, [], hex('a'));
const resolved = c('5', deeper.id, [...anchor, ['buzz-resolved', 'resolved']], hex('b'));
const plain = c('6', pr);
const review = c('7', pr, [['buzz-review', 'approve']]);
const orphanReply = c('8', hex('9'));
const { threads, other } = lineThreads([resolved, deeper, plain, reply, root, review, orphanReply], pr);
const th = threads.get(threadKey('A', 2));
check('one thread', [...threads.keys()], [threadKey('A', 2)]);
check('its root', th.roots.map((x) => x.content), ['2']);
check('its replies, oldest first, the mark left out', th.replies.map((x) => x.content), ['3', '4']);
check('resolved', [th.resolved, th.resolvedBy], [true, hex('b')]);
check('its commit', th.commit, 'c'.repeat(40));
check('the rest', other.map((x) => x.content), ['6', '7', '8']);
const reopened = c('a', root.id, [...anchor, ['buzz-resolved', 'open']], hex('a'));
check('reopened by a newer mark', lineThreads([root, resolved, reply, deeper, reopened], pr).threads.get(threadKey('A', 2)).resolved, false);
check('a line of 0 anchors nothing', lineThreads([c('b', pr, [['buzz-file', 'A'], ['buzz-line', '0']])], pr).threads.size, 0);
// A reply loop (ids that name each other) ends.
const x = { id: hex('c'), kind: 1111, pubkey: hex('a'), created_at: 1, content: '', tags: [['e', hex('d')]] };
const y = { id: hex('d'), kind: 1111, pubkey: hex('a'), created_at: 2, content: '', tags: [['e', hex('c')]] };
check('a loop is no thread', lineThreads([x, y], pr).other.length, 2);

let big = 'diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,5000 +1,5000 @@\n' + '+l\n'.repeat(5000);
const t0 = performance.now();
check('5 000 numbered lines', numberLines(big).filter((l) => l.n).length, 5000);
const ms = performance.now() - t0;
if (ms > 250) fails.push(`numbering a 5 000-line diff took ${ms.toFixed(0)} ms`);

if (fails.length) { console.log(fails.join('\n')); process.exit(1); }
console.log('ok');
