// Markdown: CommonMark 0.31 plus GFM tables and strikethrough, parsed
// into a tree and built as DOM nodes with createElement and text nodes
// only. Event content is untrusted: raw HTML is kept as text, a link
// keeps its href only when it is http, https, mailto or relative, and
// images become links (the page's CSP would not load them anyway).
//
// The parser follows the spec's two phases (blocks, then inlines) the way
// the reference implementation does: one pass over the lines, a delimiter
// stack for emphasis and a bracket stack for links, so a long message
// costs time in proportion to its length. Regular expressions here are
// anchored at a position and have no nested quantifiers.

const C_TAB = 9, C_NL = 10, C_SPACE = 32, C_GT = 62, C_LT = 60, C_BACKSLASH = 92,
  C_BACKTICK = 96, C_OPEN_BRACKET = 91, C_CLOSE_BRACKET = 93, C_BANG = 33,
  C_AMP = 38, C_ASTERISK = 42, C_UNDERSCORE = 95, C_TILDE = 126, C_COLON = 58,
  C_PIPE = 124;

// maxNesting bounds how deep block quotes and lists nest: deeper markers
// are text, so a hostile message cannot build a tree that overflows the
// stack when rendered.
const maxNesting = 64;

// maxLinkParens bounds nested parentheses in a link destination, as
// cmark does: without it each "](" rescans the rest of the paragraph.
const maxLinkParens = 32;

const reNonSpace = /[^ \t\f\v\r\n]/;
const reThematicBreak = /^(?:\*[ \t]*){3,}$|^(?:_[ \t]*){3,}$|^(?:-[ \t]*){3,}$/;
const reATXHeadingMarker = /^#{1,6}(?:[ \t]+|$)/;
const reCodeFence = /^`{3,}(?!.*`)|^~{3,}/;
const reClosingCodeFence = /^(?:`{3,}|~{3,})(?=[ \t]*$)/;
const reSetextHeadingLine = /^(?:=+|-+)[ \t]*$/;
const reBulletListMarker = /^[*+-]/;
const reOrderedListMarker = /^(\d{1,9})([.)])/;
const reLineEnding = /\r\n|\n|\r/;
const reTableDelim = /^\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;

const ESCAPABLE = '[!"#$%&\'()*+,./:;<=>?@[\\\\\\]^_`{|}~-]';
const reEntityHere = /^&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});/;
const reEntityOrEscapedChar = new RegExp('\\\\' + ESCAPABLE + '|&(?:#[xX][0-9a-fA-F]{1,6}|#[0-9]{1,7}|[A-Za-z][A-Za-z0-9]{1,31});', 'g');
const reEscapable = new RegExp('^' + ESCAPABLE);
const reLinkTitle = new RegExp('^(?:"(\\\\' + ESCAPABLE + '|\\\\[^\\\\]|[^\\\\"\\x00])*"' +
  '|\'(\\\\' + ESCAPABLE + '|\\\\[^\\\\]|[^\\\\\'\\x00])*\'' +
  '|\\((\\\\' + ESCAPABLE + '|\\\\[^\\\\]|[^\\\\()\\x00])*\\))');
const reLinkDestinationBraces = /^(?:<(?:[^<>\n\\\x00]|\\.)*>)/;
const reSpnl = /^ *(?:\n *)?/;
const reWhitespaceChar = /^[ \t\n\x0b\x0c\x0d]/;
const reUnicodeWhitespaceChar = /^\s/u;
const rePunctuation = /^[\p{P}\p{S}]/u;
const reFinalSpace = / *$/;
const reInitialSpace = /^ */;
const reSpaceAtEndOfLine = /^ *(?:\n|$)/;
const reLinkLabel = /^\[(?:[^\\[\]]|\\.){0,1000}\]/s;
const reMain = /^[^\n`[\]\\!<&*_~]+/;
const reAutolink = /^<[A-Za-z][A-Za-z0-9.+-]{1,31}:[^<>\x00-\x20]*>/;
const reEmailAutolink = /^<([a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*)>/;
const reTicks = /`+/;
const reTicksHere = /^`+/;

// A few entities by name; others are looked up by opts.entity (the page
// uses the browser's own table, the tests Go's).
const namedEntities = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', copy: '©', reg: '®', trade: '™', hellip: '…', mdash: '—', ndash: '–', laquo: '«', raquo: '»', ldquo: '“', rdquo: '”', lsquo: '‘', rsquo: '’', middot: '·', deg: '°', times: '×', divide: '÷', euro: '€' };

let entityLookup = null;

function decodeEntity(s) {
  if (s[1] === '#') {
    const n = s[2] === 'x' || s[2] === 'X' ? parseInt(s.slice(3, -1), 16) : parseInt(s.slice(2, -1), 10);
    if (n === 0 || n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return '\ufffd';
    return String.fromCodePoint(n);
  }
  const name = s.slice(1, -1);
  if (Object.hasOwn(namedEntities, name)) return namedEntities[name];
  const v = entityLookup ? entityLookup(name) : null;
  return v == null ? s : v;
}

function unescapeString(s) {
  if (!/[\\&]/.test(s)) return s;
  return s.replace(reEntityOrEscapedChar, (m) => (m[0] === '\\' ? m[1] : decodeEntity(m)));
}

/** normalizeReference folds a link label for matching: case and runs of white space. */
export function normalizeReference(s) {
  return s.slice(1, -1).trim().replace(/[ \t\r\n]+/g, ' ').toLowerCase().toUpperCase();
}

// normalizeURI percent-encodes what a URL may not hold raw, keeping
// existing %XX escapes, as the reference implementation does.
function normalizeURI(uri) {
  let out = '';
  for (let i = 0; i < uri.length; i++) {
    const c = uri.charCodeAt(i);
    if (c === 37 && /^[0-9a-fA-F]{2}/.test(uri.slice(i + 1, i + 3))) { out += uri.slice(i, i + 3); i += 2; continue; }
    if (c < 128 && /[A-Za-z0-9;/?:@&=+$,\-_.!~*'()#]/.test(uri[i])) { out += uri[i]; continue; }
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < uri.length) {
      const d = uri.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { out += encodeURIComponent(uri[i] + uri[i + 1]); i++; continue; }
    }
    if (c >= 0xd800 && c <= 0xdfff) { out += '%EF%BF%BD'; continue; }
    out += encodeURIComponent(uri[i]);
  }
  return out;
}

/**
 * safeHref returns href when following it cannot run script or reach an
 * unexpected scheme: http, https, mailto, or a URL with no scheme at all
 * (relative to this page). Anything else (javascript:, data:, vbscript:,
 * file:, …) gives null. href is already percent-encoded, so white space and
 * control characters a browser would strip cannot hide a scheme.
 */
export function safeHref(href) {
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(href);
  if (!m) return /^[\x21-\x7e]*$/.test(href) ? href : null;
  const scheme = m[1].toLowerCase();
  return scheme === 'http' || scheme === 'https' || scheme === 'mailto' ? href : null;
}

// ---- tree ----
// Children are a linked list, so moving a run of inlines into an
// emphasis or a link costs the run's length, not the paragraph's.

function node(type, start) {
  return { type, parent: null, first: null, lastc: null, next: null, prev: null, open: true, start: start || 0, end: 0, string: '' };
}
function unlink(n) {
  if (n.prev) n.prev.next = n.next; else if (n.parent) n.parent.first = n.next;
  if (n.next) n.next.prev = n.prev; else if (n.parent) n.parent.lastc = n.prev;
  n.parent = n.next = n.prev = null;
}
function append(parent, child) {
  unlink(child);
  child.parent = parent;
  if (parent.lastc) { parent.lastc.next = child; child.prev = parent.lastc; parent.lastc = child; } else parent.first = parent.lastc = child;
}
function insertAfter(n, sib) {
  unlink(sib);
  sib.next = n.next;
  if (sib.next) sib.next.prev = sib;
  sib.prev = n;
  n.next = sib;
  sib.parent = n.parent;
  if (!sib.next) sib.parent.lastc = sib;
}
function replace(old, nu) { insertAfter(old, nu); unlink(old); }
function* kids(n) { for (let c = n.first; c; c = c.next) yield c; }
function last(n) { return n.lastc; }
function nextSibling(n) { return n.next; }

function isSpaceOrTab(c) { return c === C_SPACE || c === C_TAB; }
function peek(ln, pos) { return pos < ln.length ? ln.charCodeAt(pos) : -1; }
function isBlank(s) { return !reNonSpace.test(s); }

function endsWithBlankLine(block) {
  const next = nextSibling(block);
  return next !== null && block.end !== next.start - 1;
}

// parseListMarker reads a list marker at the parser's position, or null.
function parseListMarker(p, container) {
  const rest = p.currentLine.slice(p.nextNonspace);
  const data = { type: null, tight: true, bulletChar: null, start: null, delimiter: null, padding: null, markerOffset: p.indent };
  if (p.indent >= 4) return null;
  let m;
  if ((m = rest.match(reBulletListMarker))) {
    data.type = 'bullet';
    data.bulletChar = m[0][0];
  } else if ((m = rest.match(reOrderedListMarker)) && (container.type !== 'paragraph' || m[1] === '1')) {
    data.type = 'ordered';
    data.start = parseInt(m[1], 10);
    data.delimiter = m[2];
  } else return null;
  const next = peek(p.currentLine, p.nextNonspace + m[0].length);
  if (!(next === -1 || next === C_TAB || next === C_SPACE)) return null;
  if (container.type === 'paragraph' && !reNonSpace.test(p.currentLine.slice(p.nextNonspace + m[0].length))) return null;
  p.advanceNextNonspace();
  p.advanceOffset(m[0].length, true);
  const spacesStartCol = p.column, spacesStartOffset = p.offset;
  do {
    p.advanceOffset(1, true);
    var nextc = peek(p.currentLine, p.offset); // eslint-disable-line no-var
  } while (p.column - spacesStartCol < 5 && isSpaceOrTab(nextc));
  const blankItem = peek(p.currentLine, p.offset) === -1;
  const spacesAfter = p.column - spacesStartCol;
  if (spacesAfter >= 5 || spacesAfter < 1 || blankItem) {
    data.padding = m[0].length + 1;
    p.column = spacesStartCol;
    p.offset = spacesStartOffset;
    if (isSpaceOrTab(peek(p.currentLine, p.offset))) p.advanceOffset(1, true);
  } else data.padding = m[0].length + spacesAfter;
  return data;
}

function listsMatch(a, b) { return a.type === b.type && a.delimiter === b.delimiter && a.bulletChar === b.bulletChar; }

function depth(n) { let d = 0; for (; n; n = n.parent) d++; return d; }

// Each block kind: cont(parser, block) says 0 matched, 1 not matched,
// 2 the line is used up; finalize; canContain; acceptsLines.
const blocks = {
  document: { cont: () => 0, finalize() {}, canContain: (t) => t !== 'item', acceptsLines: false },
  list: {
    cont: () => 0,
    finalize(p, block) {
      for (const item of kids(block)) {
        if (endsWithBlankLine(item) && nextSibling(item)) { block.list.tight = false; break; }
        let loose = false;
        for (const sub of kids(item)) {
          if (endsWithBlankLine(sub) && (nextSibling(item) || nextSibling(sub))) { loose = true; break; }
        }
        if (loose) { block.list.tight = false; break; }
      }
      const l = last(block);
      if (l) block.end = l.end;
    },
    canContain: (t) => t === 'item',
    acceptsLines: false,
  },
  block_quote: {
    cont(p) {
      const ln = p.currentLine;
      if (!p.indented && peek(ln, p.nextNonspace) === C_GT) {
        p.advanceNextNonspace();
        p.advanceOffset(1, false);
        if (isSpaceOrTab(peek(ln, p.offset))) p.advanceOffset(1, true);
        return 0;
      }
      return 1;
    },
    finalize() {},
    canContain: (t) => t !== 'item',
    acceptsLines: false,
  },
  item: {
    cont(p, container) {
      if (p.blank) {
        if (!container.first) return 1;
        p.advanceNextNonspace();
      } else if (p.indent >= container.list.markerOffset + container.list.padding) {
        p.advanceOffset(container.list.markerOffset + container.list.padding, true);
      } else return 1;
      return 0;
    },
    finalize(p, block) {
      const l = last(block);
      if (l) block.end = l.end;
      else block.end = block.start;
    },
    canContain: (t) => t !== 'item',
    acceptsLines: false,
  },
  heading: { cont: () => 1, finalize() {}, canContain: () => false, acceptsLines: false },
  thematic_break: { cont: () => 1, finalize() {}, canContain: () => false, acceptsLines: false },
  code_block: {
    cont(p, container) {
      const ln = p.currentLine, indent = p.indent;
      if (container.fenced) {
        const m = indent <= 3 && ln.charAt(p.nextNonspace) === container.fenceChar && ln.slice(p.nextNonspace).match(reClosingCodeFence);
        if (m && m[0].length >= container.fenceLength) {
          p.lastLineLength = p.offset + indent + m[0].length;
          p.finalize(container, p.lineNumber);
          return 2;
        }
        let i = container.fenceOffset;
        while (i > 0 && isSpaceOrTab(peek(ln, p.offset))) { p.advanceOffset(1, true); i--; }
      } else if (indent >= 4) p.advanceOffset(4, true);
      else if (p.blank) p.advanceNextNonspace();
      else return 1;
      return 0;
    },
    finalize(p, block) {
      if (block.fenced) {
        const content = block.string;
        const nl = content.indexOf('\n');
        block.info = unescapeString(content.slice(0, nl).trim());
        block.literal = content.slice(nl + 1);
      } else {
        const lines = block.string.split('\n');
        while (lines.length > 0 && isBlank(lines[lines.length - 1])) lines.pop();
        block.literal = lines.join('\n') + '\n';
      }
      block.string = '';
    },
    canContain: () => false,
    acceptsLines: true,
  },
  paragraph: {
    cont: (p) => (p.blank ? 1 : 0),
    finalize(p, block) {
      let pos, has = false;
      while (peek(block.string, 0) === C_OPEN_BRACKET && (pos = p.inline.parseReference(block.string, p.refmap))) {
        block.string = block.string.slice(pos);
        has = true;
      }
      if (has && isBlank(block.string)) unlink(block);
    },
    canContain: () => false,
    acceptsLines: true,
  },
  table: {
    cont(p, container) {
      if (p.blank) return 1;
      const row = splitRow(p.currentLine.slice(p.offset), container.align.length);
      if (!row) return 1;
      container.rows.push(row);
      p.advanceOffset(p.currentLine.length - p.offset, false);
      return 2;
    },
    finalize() {},
    canContain: () => false,
    acceptsLines: false,
  },
};

// splitRow splits a GFM table row into cells (\| is a pipe in a cell);
// n pads or trims to the header's width when given.
function splitRow(line, n) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
    if (s[i] === '|') { cells.push(cur.trim()); cur = ''; continue; }
    cur += s[i];
  }
  cells.push(cur.trim());
  if (n === undefined) return cells;
  while (cells.length < n) cells.push('');
  return cells.slice(0, n);
}

// Block starts, tried in order: 0 none, 1 container, 2 leaf.
const blockStarts = [
  // block quote
  (p) => {
    if (!p.indented && peek(p.currentLine, p.nextNonspace) === C_GT && depth(p.tip) < maxNesting) {
      p.advanceNextNonspace();
      p.advanceOffset(1, false);
      if (isSpaceOrTab(peek(p.currentLine, p.offset))) p.advanceOffset(1, true);
      p.closeUnmatchedBlocks();
      p.addChild('block_quote', p.nextNonspace);
      return 1;
    }
    return 0;
  },
  // ATX heading
  (p) => {
    let m;
    if (!p.indented && (m = p.currentLine.slice(p.nextNonspace).match(reATXHeadingMarker))) {
      p.advanceNextNonspace();
      p.advanceOffset(m[0].length, false);
      p.closeUnmatchedBlocks();
      const h = p.addChild('heading', p.nextNonspace);
      h.level = m[0].trim().length;
      h.string = p.currentLine.slice(p.offset).replace(/^[ \t]*#+[ \t]*$/, '').replace(/[ \t]+#+[ \t]*$/, '');
      p.advanceOffset(p.currentLine.length - p.offset);
      return 2;
    }
    return 0;
  },
  // fenced code block
  (p) => {
    let m;
    if (!p.indented && (m = p.currentLine.slice(p.nextNonspace).match(reCodeFence))) {
      const fenceLength = m[0].length;
      p.closeUnmatchedBlocks();
      const c = p.addChild('code_block', p.nextNonspace);
      c.fenced = true;
      c.fenceLength = fenceLength;
      c.fenceChar = m[0][0];
      c.fenceOffset = p.indent;
      p.advanceNextNonspace();
      p.advanceOffset(fenceLength, false);
      return 2;
    }
    return 0;
  },
  // setext heading
  (p, container) => {
    let m;
    if (!p.indented && container.type === 'paragraph' && (m = p.currentLine.slice(p.nextNonspace).match(reSetextHeadingLine))) {
      p.closeUnmatchedBlocks();
      let pos;
      while (peek(container.string, 0) === C_OPEN_BRACKET && (pos = p.inline.parseReference(container.string, p.refmap))) container.string = container.string.slice(pos);
      if (container.string.length > 0) {
        const h = node('heading', container.start);
        h.level = m[0][0] === '=' ? 1 : 2;
        h.string = container.string;
        replace(container, h);
        p.tip = h;
        p.advanceOffset(p.currentLine.length - p.offset, false);
        return 2;
      }
      return 0;
    }
    return 0;
  },
  // thematic break
  (p) => {
    if (!p.indented && reThematicBreak.test(p.currentLine.slice(p.nextNonspace))) {
      p.closeUnmatchedBlocks();
      p.addChild('thematic_break', p.nextNonspace);
      p.advanceOffset(p.currentLine.length - p.offset, false);
      return 2;
    }
    return 0;
  },
  // list item
  (p, container) => {
    if ((!p.indented || container.type === 'list') && depth(p.tip) < maxNesting) {
      const data = parseListMarker(p, container);
      if (!data) return 0;
      p.closeUnmatchedBlocks();
      if (p.tip.type !== 'list' || !listsMatch(container.list, data)) {
        const l = p.addChild('list', p.nextNonspace);
        l.list = data;
      }
      const item = p.addChild('item', p.nextNonspace);
      item.list = data;
      return 1;
    }
    return 0;
  },
  // indented code block
  (p) => {
    if (p.indented && p.tip.type !== 'paragraph' && !p.blank) {
      p.advanceOffset(4, true);
      p.closeUnmatchedBlocks();
      p.addChild('code_block', p.offset);
      return 2;
    }
    return 0;
  },
  // GFM table: a one-line paragraph, this line its delimiter row
  (p, container) => {
    if (p.indented || container.type !== 'paragraph' || container.lines !== 1) return 0;
    const ln = p.currentLine.slice(p.nextNonspace);
    if (!ln.includes('-') || !reTableDelim.test(ln) || (!ln.includes('|') && !container.string.includes('|'))) return 0;
    const head = splitRow(container.string.replace(/\n$/, ''));
    const delims = splitRow(ln);
    if (head.length !== delims.length) return 0;
    p.closeUnmatchedBlocks();
    const t = node('table', container.start);
    t.head = head;
    t.align = delims.map((d) => (d.startsWith(':') && d.endsWith(':') ? 'center' : d.endsWith(':') ? 'right' : d.startsWith(':') ? 'left' : ''));
    t.rows = [];
    replace(container, t);
    p.tip = t;
    p.advanceOffset(p.currentLine.length - p.offset, false);
    return 2;
  },
];

class BlockParser {
  constructor() {
    this.inline = new InlineParser();
  }

  addLine() {
    if (this.partiallyConsumedTab) {
      this.offset += 1;
      const charsToTab = 4 - (this.column % 4);
      this.tip.string += ' '.repeat(charsToTab);
    }
    this.tip.string += this.currentLine.slice(this.offset) + '\n';
    // Counted, not read back from string: reading a string being built
    // by += flattens it, once a line, which is quadratic.
    this.tip.lines = (this.tip.lines || 0) + 1;
  }

  addChild(tag, offset) {
    while (!blocks[this.tip.type].canContain(tag)) this.finalize(this.tip, this.lineNumber - 1);
    const child = node(tag, this.lineNumber);
    append(this.tip, child);
    this.tip = child;
    return child;
  }

  closeUnmatchedBlocks() {
    if (!this.allClosed) {
      while (this.oldtip !== this.lastMatchedContainer) {
        const parent = this.oldtip.parent;
        this.finalize(this.oldtip, this.lineNumber - 1);
        this.oldtip = parent;
      }
      this.allClosed = true;
    }
  }

  findNextNonspace() {
    const ln = this.currentLine;
    let i = this.offset, cols = this.column, c;
    while ((c = ln.charAt(i)) !== '') {
      if (c === ' ') { i++; cols++; } else if (c === '\t') { i++; cols += 4 - (cols % 4); } else break;
    }
    this.blank = c === '\n' || c === '\r' || c === '';
    this.nextNonspace = i;
    this.nextNonspaceColumn = cols;
    this.indent = this.nextNonspaceColumn - this.column;
    this.indented = this.indent >= 4;
  }

  advanceNextNonspace() {
    this.offset = this.nextNonspace;
    this.column = this.nextNonspaceColumn;
    this.partiallyConsumedTab = false;
  }

  advanceOffset(count, columns) {
    const ln = this.currentLine;
    let c;
    while (count > 0 && (c = ln[this.offset])) {
      if (c === '\t') {
        const charsToTab = 4 - (this.column % 4);
        if (columns) {
          this.partiallyConsumedTab = charsToTab > count;
          const charsToAdvance = charsToTab > count ? count : charsToTab;
          this.column += charsToAdvance;
          this.offset += this.partiallyConsumedTab ? 0 : 1;
          count -= charsToAdvance;
        } else {
          this.partiallyConsumedTab = false;
          this.column += charsToTab;
          this.offset += 1;
          count -= 1;
        }
      } else {
        this.partiallyConsumedTab = false;
        this.offset += 1;
        this.column += 1;
        count -= 1;
      }
    }
  }

  incorporateLine(ln) {
    let allMatched = true, t;
    let container = this.doc;
    this.oldtip = this.tip;
    this.offset = 0;
    this.column = 0;
    this.blank = false;
    this.partiallyConsumedTab = false;
    this.lineNumber += 1;
    if (ln.indexOf('\u0000') !== -1) ln = ln.replace(/\0/g, '\uFFFD');
    this.currentLine = ln;

    let lastChild;
    while ((lastChild = last(container)) && lastChild.open) {
      container = lastChild;
      this.findNextNonspace();
      const r = blocks[container.type].cont(this, container);
      if (r === 0) continue;
      if (r === 1) { container = container.parent; allMatched = false; break; }
      if (r === 2) return;
    }
    if (!allMatched) {
      // container is the last matched one
    }
    this.allClosed = container === this.oldtip;
    this.lastMatchedContainer = container;

    let matchedLeaf = container.type !== 'paragraph' && blocks[container.type].acceptsLines;
    while (!matchedLeaf) {
      this.findNextNonspace();
      if (!this.indented && !/^[#`~*+_=<>0-9|:-]/.test(ln.slice(this.nextNonspace))) {
        this.advanceNextNonspace();
        break;
      }
      let i = 0, res = 0;
      for (; i < blockStarts.length; i++) {
        res = blockStarts[i](this, container);
        if (res === 1) { container = this.tip; break; }
        if (res === 2) { container = this.tip; matchedLeaf = true; break; }
      }
      if (i === blockStarts.length) { this.advanceNextNonspace(); break; }
    }

    if (!this.allClosed && !this.blank && this.tip.type === 'paragraph') {
      this.addLine(); // lazy paragraph continuation
    } else {
      this.closeUnmatchedBlocks();
      t = container.type;
      if (blocks[t].acceptsLines) {
        this.addLine();
      } else if (this.offset < ln.length && !this.blank) {
        container = this.addChild('paragraph', this.offset);
        this.advanceNextNonspace();
        this.addLine();
      }
    }
    this.lastLineLength = ln.length;
  }

  finalize(block, lineNumber) {
    const above = block.parent;
    block.open = false;
    block.end = lineNumber;
    blocks[block.type].finalize(this, block);
    this.tip = above;
  }

  processInlines(block) {
    const walk = (n) => {
      if (n.type === 'paragraph' || n.type === 'heading') {
        this.inline.parse(n, n.string.replace(/\n$/, ''), this.refmap);
        n.string = '';
      } else if (n.type === 'table') {
        n.headInlines = n.head.map((c) => this.inline.cell(c, this.refmap));
        n.rowInlines = n.rows.map((r) => r.map((c) => this.inline.cell(c, this.refmap)));
      }
      for (let c = n.first; c; c = c.next) walk(c);
    };
    walk(block);
  }

  parse(input) {
    this.doc = node('document', 1);
    this.tip = this.doc;
    this.refmap = new Map();
    this.lineNumber = 0;
    this.lastLineLength = 0;
    this.offset = 0;
    this.column = 0;
    this.lastMatchedContainer = this.doc;
    this.currentLine = '';
    const lines = input.split(reLineEnding);
    let len = lines.length;
    if (input.charCodeAt(input.length - 1) === C_NL || input.endsWith('\r')) len -= 1;
    for (let i = 0; i < len; i++) this.incorporateLine(lines[i]);
    while (this.tip) this.finalize(this.tip, len);
    this.processInlines(this.doc);
    return this.doc;
  }
}

// ---- inlines ----

// charBefore is the code point that ends just before i.
function charBefore(s, i) {
  const c = s.charCodeAt(i - 1);
  if (c >= 0xdc00 && c <= 0xdfff && i >= 2) return String.fromCodePoint(s.codePointAt(i - 2));
  return s.charAt(i - 1);
}

const stickyCopies = new Map();

function text(s) { const n = node('text'); n.literal = s; return n; }

class InlineParser {
  constructor() { this.subject = ''; this.pos = 0; this.delimiters = null; this.brackets = null; this.refmap = new Map(); }

  // match matches re (anchored with ^) at pos through a sticky copy, so
  // no tail of the subject is copied.
  match(re) {
    let y = stickyCopies.get(re);
    if (!y) { y = new RegExp(re.source.replace(/^\^/, ''), re.flags + 'y'); stickyCopies.set(re, y); }
    y.lastIndex = this.pos;
    const m = y.exec(this.subject);
    if (m === null) return null;
    this.pos = y.lastIndex;
    return m[0];
  }

  peek() { return this.pos < this.subject.length ? this.subject.charCodeAt(this.pos) : -1; }

  spnl() { this.match(reSpnl); return true; }

  parseBackticks(block) {
    const start = this.pos;
    const ticks = this.match(reTicksHere);
    if (ticks === null) return false;
    const after = this.pos;
    // The closer is the next run of exactly as many backticks. Runs are
    // indexed once per subject, so many unmatched openers stay linear.
    if (!this.tickRuns) {
      this.tickRuns = new Map();
      const s = this.subject;
      for (let i = s.indexOf('`', start); i >= 0; i = s.indexOf('`', i)) {
        let j = i;
        while (s.charCodeAt(j) === C_BACKTICK) j++;
        const n = j - i;
        if (!this.tickRuns.has(n)) this.tickRuns.set(n, []);
        this.tickRuns.get(n).push(i);
        i = j;
      }
    }
    const runs = this.tickRuns.get(ticks.length) || [];
    let lo = 0, hi = runs.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (runs[mid] < after) lo = mid + 1; else hi = mid; }
    if (lo < runs.length) {
      const end = runs[lo];
      let contents = this.subject.slice(after, end).replace(/\n/g, ' ');
      if (contents.length > 0 && /[^ ]/.test(contents) && contents[0] === ' ' && contents[contents.length - 1] === ' ') contents = contents.slice(1, -1);
      const n = node('code');
      n.literal = contents;
      append(block, n);
      this.pos = end + ticks.length;
      return true;
    }
    append(block, text(ticks));
    return true;
  }

  parseBackslash(block) {
    const subj = this.subject;
    this.pos += 1;
    if (this.peek() === C_NL) {
      this.pos += 1;
      append(block, node('linebreak'));
    } else if (reEscapable.test(subj.charAt(this.pos))) {
      append(block, text(subj.charAt(this.pos)));
      this.pos += 1;
    } else append(block, text('\\'));
    return true;
  }

  parseAutolink(block) {
    let m;
    if ((m = this.match(reEmailAutolink))) {
      const dest = m.slice(1, m.length - 1);
      const n = node('link');
      n.destination = normalizeURI('mailto:' + dest);
      n.title = '';
      append(n, text(dest));
      append(block, n);
      return true;
    }
    if ((m = this.match(reAutolink))) {
      const dest = m.slice(1, m.length - 1);
      const n = node('link');
      n.destination = normalizeURI(dest);
      n.title = '';
      append(n, text(dest));
      append(block, n);
      return true;
    }
    return false;
  }

  scanDelims(cc) {
    let numdelims = 0;
    const startpos = this.pos;
    if (cc === C_TILDE) {
      while (this.peek() === cc) { numdelims++; this.pos++; }
      if (numdelims > 2) { this.pos = startpos; return null; }
    } else {
      while (this.peek() === cc) { numdelims++; this.pos++; }
    }
    if (numdelims === 0) return null;
    const after = this.peek() === -1 ? '\n' : String.fromCodePoint(this.subject.codePointAt(this.pos));
    const before = startpos === 0 ? '\n' : charBefore(this.subject, startpos);
    const afterIsWhitespace = reUnicodeWhitespaceChar.test(after);
    const afterIsPunctuation = rePunctuation.test(after);
    const beforeIsWhitespace = reUnicodeWhitespaceChar.test(before);
    const beforeIsPunctuation = rePunctuation.test(before);
    const leftFlanking = !afterIsWhitespace && (!afterIsPunctuation || beforeIsWhitespace || beforeIsPunctuation);
    const rightFlanking = !beforeIsWhitespace && (!beforeIsPunctuation || afterIsWhitespace || afterIsPunctuation);
    let canOpen, canClose;
    if (cc === C_UNDERSCORE) {
      canOpen = leftFlanking && (!rightFlanking || beforeIsPunctuation);
      canClose = rightFlanking && (!leftFlanking || afterIsPunctuation);
    } else {
      canOpen = leftFlanking;
      canClose = rightFlanking;
    }
    this.pos = startpos;
    return { numdelims, canOpen, canClose };
  }

  handleDelim(cc, block) {
    const res = this.scanDelims(cc);
    if (!res) return false;
    const startpos = this.pos;
    this.pos += res.numdelims;
    const n = text(this.subject.slice(startpos, this.pos));
    append(block, n);
    if (res.canOpen || res.canClose) {
      this.delimiters = { cc, numdelims: res.numdelims, origdelims: res.numdelims, node: n, previous: this.delimiters, next: null, canOpen: res.canOpen, canClose: res.canClose };
      if (this.delimiters.previous !== null) this.delimiters.previous.next = this.delimiters;
    }
    return true;
  }

  removeDelimiter(delim) {
    if (delim.previous !== null) delim.previous.next = delim.next;
    if (delim.next === null) this.delimiters = delim.previous;
    else delim.next.previous = delim.previous;
  }

  processEmphasis(stackBottom) {
    const openersBottom = new Map();
    const key = (d) => d.cc + ':' + (d.canOpen ? 1 : 0) + ':' + (d.origdelims % 3);
    // The first closer above stackBottom; none when stackBottom is the top
    // (a link with no delimiters inside), without walking the whole stack.
    let closer = this.delimiters === stackBottom ? null : this.delimiters;
    while (closer !== null && closer.previous !== stackBottom) closer = closer.previous;
    while (closer !== null) {
      const closercc = closer.cc;
      if (!closer.canClose) { closer = closer.next; continue; }
      let opener = closer.previous, openerFound = false;
      const bottomKey = key(closer);
      const bottom = openersBottom.has(bottomKey) ? openersBottom.get(bottomKey) : stackBottom;
      while (opener !== null && opener !== stackBottom && opener !== bottom) {
        const oddMatch = closercc !== C_TILDE && (closer.canOpen || opener.canClose) && closer.origdelims % 3 !== 0 && (opener.origdelims + closer.origdelims) % 3 === 0;
        if (opener.cc === closer.cc && opener.canOpen && !oddMatch && (closercc !== C_TILDE || opener.numdelims === closer.numdelims)) { openerFound = true; break; }
        opener = opener.previous;
      }
      const oldCloser = closer;
      if (closercc === C_ASTERISK || closercc === C_UNDERSCORE || closercc === C_TILDE) {
        if (!openerFound) closer = closer.next;
        else {
          const useDelims = closercc === C_TILDE ? closer.numdelims : closer.numdelims >= 2 && opener.numdelims >= 2 ? 2 : 1;
          const openerInl = opener.node, closerInl = closer.node;
          opener.numdelims -= useDelims;
          closer.numdelims -= useDelims;
          openerInl.literal = openerInl.literal.slice(0, openerInl.literal.length - useDelims);
          closerInl.literal = closerInl.literal.slice(0, closerInl.literal.length - useDelims);
          const emph = node(closercc === C_TILDE ? 'del' : useDelims === 1 ? 'emph' : 'strong');
          for (let k = openerInl.next; k && k !== closerInl;) { const nx = k.next; append(emph, k); k = nx; }
          insertAfter(openerInl, emph);
          // delimiters between opener and closer go
          let d = closer.previous;
          while (d !== null && d !== opener) { const prev = d.previous; this.removeDelimiter(d); d = prev; }
          if (opener.numdelims === 0) { unlink(openerInl); this.removeDelimiter(opener); }
          if (closer.numdelims === 0) {
            unlink(closerInl);
            const next = closer.next;
            this.removeDelimiter(closer);
            closer = next;
          }
        }
      }
      if (!openerFound) {
        openersBottom.set(bottomKey, oldCloser.previous);
        if (!oldCloser.canOpen) this.removeDelimiter(oldCloser);
      }
    }
    while (this.delimiters !== null && this.delimiters !== stackBottom) this.removeDelimiter(this.delimiters);
  }

  parseLinkTitle() {
    const title = this.match(reLinkTitle);
    if (title === null) return null;
    return unescapeString(title.slice(1, -1));
  }

  parseLinkDestination() {
    let res = this.match(reLinkDestinationBraces);
    if (res === null) {
      if (this.peek() === C_LT) return null;
      const savepos = this.pos;
      let openparens = 0, c;
      while ((c = this.peek()) !== -1) {
        if (c === C_BACKSLASH && reEscapable.test(this.subject.charAt(this.pos + 1))) {
          this.pos += 1;
          if (this.peek() !== -1) this.pos += 1;
        } else if (c === 40) {
          this.pos += 1;
          openparens += 1;
          if (openparens > maxLinkParens) return null;
        }
        else if (c === 41) {
          if (openparens < 1) break;
          this.pos += 1; openparens -= 1;
        } else if (c <= 32 || c === 127) break;
        else this.pos += 1;
      }
      if (this.pos === savepos && c !== 41) return null;
      if (openparens !== 0) return null;
      res = this.subject.slice(savepos, this.pos);
      return normalizeURI(unescapeString(res));
    }
    return normalizeURI(unescapeString(res.slice(1, -1)));
  }

  parseLinkLabel() {
    const m = this.match(reLinkLabel);
    return m === null || m.length > 1001 ? 0 : m.length;
  }

  parseOpenBracket(block) {
    const startpos = this.pos;
    this.pos += 1;
    const n = text('[');
    append(block, n);
    this.addBracket(n, startpos, false);
    return true;
  }

  parseBang(block) {
    const startpos = this.pos;
    this.pos += 1;
    if (this.peek() === C_OPEN_BRACKET) {
      this.pos += 1;
      const n = text('![');
      append(block, n);
      this.addBracket(n, startpos + 1, true);
    } else append(block, text('!'));
    return true;
  }

  parseCloseBracket(block) {
    let startpos, isImage, dest, title, matched = false, reflabel;
    this.pos += 1;
    startpos = this.pos;
    const opener = this.brackets;
    if (opener === null) { append(block, text(']')); return true; }
    if (!opener.active) { append(block, text(']')); this.removeBracket(); return true; }
    isImage = opener.image;
    const savepos = this.pos;
    if (this.peek() === 40) {
      this.pos++;
      if (this.spnl() && (dest = this.parseLinkDestination()) !== null && this.spnl() &&
        ((reWhitespaceChar.test(this.subject.charAt(this.pos - 1)) && (title = this.parseLinkTitle())) || true) &&
        this.spnl() && this.peek() === 41) {
        this.pos += 1;
        matched = true;
      } else this.pos = savepos;
    }
    if (!matched) {
      const beforelabel = this.pos;
      const n = this.parseLinkLabel();
      if (n > 2) reflabel = this.subject.slice(beforelabel, beforelabel + n);
      else if (!opener.bracketAfter && startpos - opener.index <= 1001) reflabel = this.subject.slice(opener.index, startpos);
      if (n === 0) this.pos = savepos;
      if (reflabel) {
        const link = this.refmap.get(normalizeReference(reflabel));
        if (link) { dest = link.destination; title = link.title; matched = true; }
      }
    }
    if (matched) {
      const n = node(isImage ? 'image' : 'link');
      n.destination = dest;
      n.title = title || '';
      for (let k = opener.node.next; k;) { const nx = k.next; append(n, k); k = nx; }
      append(block, n);
      this.processEmphasis(opener.previousDelimiter);
      this.removeBracket();
      unlink(opener.node);
      if (!isImage) {
        let o = this.brackets;
        while (o !== null) { if (!o.image) o.active = false; o = o.previous; }
      }
      return true;
    }
    this.removeBracket();
    this.pos = startpos;
    append(block, text(']'));
    return true;
  }

  addBracket(n, index, image) {
    if (this.brackets !== null) this.brackets.bracketAfter = true;
    this.brackets = { node: n, previous: this.brackets, previousDelimiter: this.delimiters, index, image, active: true };
  }

  removeBracket() { this.brackets = this.brackets.previous; }

  parseEntity(block) {
    const m = this.match(reEntityHere);
    if (!m) return false;
    append(block, text(decodeEntity(m)));
    return true;
  }

  parseString(block) {
    const m = this.match(reMain);
    if (m === null) return false;
    append(block, text(m));
    return true;
  }

  parseNewline(block) {
    this.pos += 1;
    const lastc = last(block);
    if (lastc && lastc.type === 'text' && lastc.literal[lastc.literal.length - 1] === ' ') {
      const hard = lastc.literal[lastc.literal.length - 2] === ' ';
      lastc.literal = lastc.literal.replace(reFinalSpace, '');
      append(block, node(hard ? 'linebreak' : 'softbreak'));
    } else append(block, node('softbreak'));
    this.match(reInitialSpace);
    return true;
  }

  parseReference(s, refmap) {
    this.subject = s;
    this.pos = 0;
    let rawlabel, dest, title, matchChars;
    const startpos = this.pos;
    matchChars = this.parseLinkLabel();
    if (matchChars === 0) return 0;
    rawlabel = this.subject.slice(0, matchChars);
    if (this.peek() === C_COLON) this.pos++;
    else { this.pos = startpos; return 0; }
    this.spnl();
    dest = this.parseLinkDestination();
    if (dest === null) { this.pos = startpos; return 0; }
    const beforetitle = this.pos;
    this.spnl();
    title = null;
    if (this.pos !== beforetitle) title = this.parseLinkTitle();
    if (title === null) { title = ''; this.pos = beforetitle; }
    let atLineEnd = true;
    if (this.match(reSpaceAtEndOfLine) === null) {
      if (title === '') atLineEnd = false;
      else {
        title = '';
        this.pos = beforetitle;
        atLineEnd = this.match(reSpaceAtEndOfLine) !== null;
      }
    }
    if (!atLineEnd) { this.pos = startpos; return 0; }
    const normlabel = normalizeReference(rawlabel);
    if (normlabel === '') { this.pos = startpos; return 0; }
    if (!refmap.has(normlabel)) refmap.set(normlabel, { destination: dest, title });
    return this.pos - startpos;
  }

  parseInline(block) {
    const c = this.peek();
    if (c === -1) return false;
    let res;
    switch (c) {
      case C_NL: res = this.parseNewline(block); break;
      case C_BACKSLASH: res = this.parseBackslash(block); break;
      case C_BACKTICK: res = this.parseBackticks(block); break;
      case C_ASTERISK: case C_UNDERSCORE: case C_TILDE: res = this.handleDelim(c, block); break;
      case C_OPEN_BRACKET: res = this.parseOpenBracket(block); break;
      case C_BANG: res = this.parseBang(block); break;
      case C_CLOSE_BRACKET: res = this.parseCloseBracket(block); break;
      case C_LT: res = this.parseAutolink(block); break;
      case C_AMP: res = this.parseEntity(block); break;
      default: res = this.parseString(block);
    }
    if (!res) {
      this.pos += 1;
      append(block, text(String.fromCharCode(c)));
    }
    return true;
  }

  parse(block, s, refmap) {
    this.subject = s.trim();
    this.refmap = refmap;
    this.pos = 0;
    this.delimiters = null;
    this.brackets = null;
    this.tickRuns = null;
    while (this.parseInline(block));
    this.processEmphasis(null);
    mergeText(block);
  }

  cell(s, refmap) {
    const n = node('cell');
    this.parse(n, s, refmap);
    return n;
  }
}

// mergeText joins adjacent text nodes (the parser leaves delimiter runs
// as their own nodes).
function mergeText(n) {
  for (let k = n.first; k;) {
    const nx = k.next;
    if (k.type === 'text' && k.prev && k.prev.type === 'text') { k.prev.literal += k.literal; unlink(k); } else if (k.first) mergeText(k);
    k = nx;
  }
}

/** parse turns markdown into a tree of blocks holding inlines. */
export function parse(src, { entity } = {}) {
  entityLookup = entity || null;
  try {
    return new BlockParser().parse(src);
  } finally {
    entityLookup = null;
  }
}

/**
 * plain is src as one line of text, its markdown read, not shown: what a
 * preview of a message (the inbox) says. Every block's text, code
 * included, is kept; marks, link targets and line breaks are not.
 */
export function plain(src) {
  const inline = new Set(['text', 'code', 'emph', 'strong', 'del', 'link', 'image']);
  const out = [];
  const walk = (n) => {
    if (n.literal !== undefined && !n.first) out.push(n.literal);
    for (const c of kids(n)) walk(c);
    if (!inline.has(n.type)) out.push(' '); // a block ends, or a line breaks
  };
  walk(parse(src));
  return out.join('').replace(/\s+/g, ' ').trim();
}

// ---- DOM ----

/**
 * render builds the tree as DOM nodes under a fragment of doc.
 * opts: breaks (soft line breaks as <br>, as chat expects), pre (the
 * page shows white space as typed, so a hard break is a <br> alone and a
 * soft one a newline), images
 * ('img' for the spec's form, else a link to the image), text(s, parent)
 * to turn plain text into nodes (mentions, bare links), code(lang, text)
 * for a code block's element.
 */
export function render(tree, doc, opts = {}) {
  const frag = doc.createDocumentFragment();
  const mk = (tag, attrs) => {
    const e = doc.createElement(tag);
    if (attrs) for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== '') e.setAttribute(k, v);
    return e;
  };
  const plainText = (s, parent) => parent.append(doc.createTextNode(s));
  let textOf = opts.text || plainText;
  const literalText = (n) => {
    let s = '';
    const walk = (k) => { if (k.type === 'text' || k.type === 'code') s += k.literal; else if (k.type === 'softbreak' || k.type === 'linebreak') s += '\n'; for (const c of kids(k)) walk(c); };
    for (const c of kids(n)) walk(c);
    return s;
  };
  const inl = (n, parent) => {
    switch (n.type) {
      case 'text': textOf(n.literal, parent); return;
      case 'softbreak': parent.append(opts.breaks ? mk('br') : doc.createTextNode('\n')); return;
      case 'linebreak': parent.append(mk('br')); if (!opts.pre) parent.append(doc.createTextNode('\n')); return;
      case 'code': { const e = mk('code'); e.append(doc.createTextNode(n.literal)); parent.append(e); return; }
      case 'emph': case 'strong': case 'del': {
        const e = mk(n.type === 'emph' ? 'em' : n.type);
        for (const c of kids(n)) inl(c, e);
        parent.append(e);
        return;
      }
      case 'link': {
        const href = safeHref(n.destination);
        const e = href !== null ? mk('a', { href: href || ' ', title: n.title }) : mk('span', { class: 'unsafe-link', title: n.title });
        if (href === '') e.setAttribute('href', '');
        if (href !== null && opts.linkAttrs) for (const [k, v] of Object.entries(opts.linkAttrs)) e.setAttribute(k, v);
        // Link text keeps bare URLs and mentions as plain text.
        const outer = textOf;
        textOf = plainText;
        try { for (const c of kids(n)) inl(c, e); } finally { textOf = outer; }
        parent.append(e);
        return;
      }
      case 'image': {
        const href = safeHref(n.destination);
        const alt = literalText(n);
        if (opts.images === 'img') { const img = mk('img'); img.setAttribute('src', href || ''); img.setAttribute('alt', alt); if (n.title) img.setAttribute('title', n.title); parent.append(img); return; }
        const e = href !== null ? mk('a', { href: href || ' ', title: n.title, class: 'image-link' }) : mk('span', { class: 'unsafe-link' });
        if (href !== null && opts.linkAttrs) for (const [k, v] of Object.entries(opts.linkAttrs)) e.setAttribute(k, v);
        e.append(doc.createTextNode('🖼 ' + (alt || 'image')));
        parent.append(e);
        return;
      }
      default: for (const c of kids(n)) inl(c, parent);
    }
  };
  const blk = (n, parent, tight) => {
    switch (n.type) {
      case 'paragraph': {
        if (tight) { for (const c of kids(n)) inl(c, parent); return; }
        const e = mk('p');
        for (const c of kids(n)) inl(c, e);
        parent.append(e);
        return;
      }
      case 'heading': {
        const e = mk('h' + n.level);
        for (const c of kids(n)) inl(c, e);
        parent.append(e);
        return;
      }
      case 'thematic_break': parent.append(mk('hr')); return;
      case 'block_quote': {
        const e = mk('blockquote');
        for (const c of kids(n)) blk(c, e, false);
        parent.append(e);
        return;
      }
      case 'list': {
        const ordered = n.list.type === 'ordered';
        const e = mk(ordered ? 'ol' : 'ul', ordered && n.list.start !== 1 ? { start: String(n.list.start) } : null);
        for (const item of kids(n)) {
          const li = mk('li');
          for (const c of kids(item)) blk(c, li, n.list.tight);
          e.append(li);
        }
        parent.append(e);
        return;
      }
      case 'code_block': {
        const lang = n.fenced ? (n.info || '').split(/[ \t]/)[0] : '';
        if (opts.code) { parent.append(opts.code(lang, n.literal)); return; }
        const pre = mk('pre');
        const code = mk('code', lang ? { class: 'language-' + lang } : null);
        code.append(doc.createTextNode(n.literal));
        pre.append(code);
        parent.append(pre);
        return;
      }
      case 'table': {
        const table = mk('table');
        const cell = (tag, inls, i) => {
          const c = mk(tag, n.align[i] ? { align: n.align[i] } : null);
          for (const k of kids(inls)) inl(k, c);
          return c;
        };
        const thead = mk('thead'), hr = mk('tr');
        n.headInlines.forEach((h, i) => hr.append(cell('th', h, i)));
        thead.append(hr);
        table.append(thead);
        if (n.rowInlines.length) {
          const tbody = mk('tbody');
          for (const r of n.rowInlines) { const tr = mk('tr'); r.forEach((c, i) => tr.append(cell('td', c, i))); tbody.append(tr); }
          table.append(tbody);
        }
        parent.append(opts.table ? opts.table(table) : table);
        return;
      }
      default: for (const c of kids(n)) blk(c, parent, tight);
    }
  };
  blk(tree, frag, false);
  return frag;
}
