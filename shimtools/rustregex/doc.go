// Package rustregex translates ripgrep 13's regular expressions into Go's.
//
// ripgrep 13 parses patterns with Rust's regex-syntax 0.6; Go's regexp
// speaks RE2. Translate reads a pattern as regex-syntax 0.6 does and
// writes the same expression in RE2 syntax, or refuses it with a
// *ParseError whose Error text is ripgrep's, byte for byte: the message,
// the pattern and the carets under the spans it blames (regex-syntax's
// formatter, multi-line patterns included).
//
// What differs and how it is bridged:
//   - \d \s \w take their Unicode meaning, and under (?-u) the ASCII one
//     Rust has (whose \s has \v, which Go's lacks); the u flag itself is
//     dropped, as Go has none, and so is x, whose spaces and comments are
//     skipped here.
//   - m is dropped, and \A and \z become line anchors: ripgrep matches
//     line by line, where text and line edges are the same.
//   - Nested repetition (a**, a{2}{3}), repeated assertions (^*) and
//     \u/\U escapes are valid in Rust; they are wrapped or spelled out.
//   - Bracket classes may nest and combine with && -- ~~; such a class is
//     computed and written out as ranges.
//   - Unicode properties are matched loosely (\p{greek}, \p{Uppercase},
//     \p{sc=Grek}); ones Go does not know are written out as ranges, and
//     ones Go has no tables for are refused. Tables are Go's (Unicode 15;
//     ripgrep 13 has Unicode 14's).
//   - \Q...\E, \< and other escapes Go allows are refused, as are
//     duplicate group names. Counts past Go's 1000 become nested counts,
//     up to maxCount.
//   - \b and \B stay Go's ASCII word boundaries, which RE2 cannot make
//     Unicode; TranslateRelaxed marks each with a named empty group for
//     the caller to check (IsWord is ripgrep's \w).
//
// The package does not run patterns, compile them, or know ripgrep's
// flags beyond case folding: -w, -x, -F, smart case and the joining of
// several patterns are the searcher's (shimtools/search), which parses
// the output with regexp/syntax. It does not translate PCRE2 (--pcre2).
package rustregex
