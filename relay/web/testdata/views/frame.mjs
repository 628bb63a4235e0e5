// The frame of the view checks that run in a real Chromium (viewChecks in
// viewcheck_test.go): a check module builds one of the client's view
// modules against this page's document and a real store (store.js), eq
// records each difference, and real input — keys and inserted text, as
// trusted events — is asked of the Go test with press and type.

const failures = [];
let checked = 0;
let seq = 0;
let answered = null;

window.viewTest = {
  ask: null,
  result: null,
  /** answer is called by the Go test once it has given ask n's input. */
  answer(n) {
    if (!this.ask || this.ask.n !== n) return;
    this.ask = null;
    const done = answered;
    answered = null;
    done();
  },
};

/** eq checks that got is want, compared as JSON, and records a failure. */
export function eq(what, got, want) {
  checked++;
  if (JSON.stringify(got) !== JSON.stringify(want)) failures.push(`${what} = ${JSON.stringify(got)}; want ${JSON.stringify(want)}`);
}

/** fail records a failure that is not a comparison. */
export function fail(what) { failures.push(what); }

/** finish hands the result to the Go test. */
export function finish() { window.viewTest.result = { done: true, checked, failures }; }

function ask(what) {
  return new Promise((resolve) => {
    answered = resolve;
    window.viewTest.ask = { n: ++seq, ...what };
  });
}

/** press presses keys (names as KeyboardEvent.key: Enter, Escape, …; {key, shift}) in the focused element. */
export async function press(...keys) {
  await ask({ keys: keys.map((k) => (typeof k === 'string' ? { key: k, shift: false } : { shift: false, ...k })) });
  await frame();
}

/** type inserts text into the focused element at once, as a paste does. */
export async function type(text) {
  await ask({ text });
  await frame();
}

/** touch rests a finger on the middle of element e for holdMs, then lifts it. */
export async function touch(e, holdMs) {
  const r = e.getBoundingClientRect();
  await ask({ touch: { x: r.left + r.width / 2, y: r.top + r.height / 2, holdMs } });
  await frame();
}

/** viewport sets the window's size (CSS pixels), as a phone's or a laptop's. */
export async function viewport(w, h) {
  await ask({ viewport: [w, h] });
  await frame();
}

/** frame waits for the next animation frame and what the store queued for it. */
export const frame = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));

/** until waits (at most 5 s) for f() to be truthy. */
export async function until(what, f) {
  const end = Date.now() + 5000;
  while (!f()) {
    if (Date.now() > end) { fail('timed out waiting for ' + what); return false; }
    await new Promise((r) => setTimeout(r, 10));
  }
  return true;
}

/** pageMarkup puts the client's own page body (index.html, its scripts left out) into this document, for views that find their elements by id. */
export async function pageMarkup() {
  const html = await (await fetch('/')).text();
  const doc = new DOMParser().parseFromString(html, 'text/html');
  for (const s of doc.querySelectorAll('script')) s.remove();
  document.body.replaceChildren(...[...doc.body.childNodes].map((n) => document.importNode(n, true)));
}

/** hex is a 64-character hex id or key made from a short label. */
export const hex = (s) => [...new TextEncoder().encode(s)].map((b) => b.toString(16).padStart(2, '0')).join('').padEnd(64, '0').slice(0, 64);

let evSeq = 0;
/** event makes an event as the relay hands it over (the store does not check signatures; the relay did). */
export function event(kind, pubkey, content, tags = [], created_at = Math.floor(Date.now() / 1000)) {
  return { id: hex('ev' + (++evSeq) + ':' + kind + content.slice(0, 8)), pubkey, created_at, kind, tags, content, sig: '0'.repeat(128) };
}

/** text is an element's text with its white space folded. */
export const text = (e) => (e ? e.textContent.replace(/\s+/g, ' ').trim() : null);
