package ignore

// Overrides are the -g/--iglob globs: a plain glob keeps matching paths, a
// '!' glob skips them, and when any plain glob exists a file matching none
// is skipped. Overrides beat every other rule. The zero value is empty.
type Overrides struct {
	m          Matcher
	whitelists int
}

// Add appends one glob, in command-line order (later ones win).
func (o *Overrides) Add(pattern string, caseFold bool) error {
	r, ok, err := parseLine(pattern, caseFold)
	if err != nil {
		return err
	}
	if !ok {
		return nil // blank, or a comment: ripgrep skips it
	}
	o.m.rules = append(o.m.rules, r)
	if !r.Negate {
		o.whitelists++
	}
	return nil
}

// Empty reports whether no glob was added.
func (o *Overrides) Empty() bool { return o == nil || len(o.m.rules) == 0 }

// Match decides path (relative to where the search started).
func (o *Overrides) Match(path string, isDir bool) Decision {
	if o.Empty() {
		return None
	}
	d, _ := o.m.Match(path, isDir)
	switch d {
	case Ignore:
		return Whitelist
	case Whitelist:
		return Ignore
	}
	if o.whitelists > 0 && !isDir {
		return Ignore
	}
	return None
}
