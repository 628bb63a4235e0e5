package ignore

// Dir holds the ignore files found in one directory of a walk. Dirs link to
// their parent, so a walk shares one chain per branch and never copies it.
// A Dir is immutable once built and safe to share between goroutines.
type Dir struct {
	parent *Dir
	// rel is this directory's path below the walk root ("" for the root).
	rel string
	// above is set for directories above the walk root: the path from this
	// directory down to the root, joined with '/' and ending in '/'.
	above   string
	isAbove bool

	custom, ign, git, exclude *Matcher
	hasGit                    bool
	anyGit                    bool
}

// Files are the ignore files read from one directory. Nil fields mean absent.
type Files struct {
	Custom  *Matcher // .rgignore
	Ignore  *Matcher // .ignore
	Git     *Matcher // .gitignore
	Exclude *Matcher // .git/info/exclude
	HasGit  bool     // the directory holds .git
}

// Child returns the Dir for the directory rel (relative to the walk root)
// below d, with the ignore files read there. d may be nil for the root.
func (d *Dir) Child(rel string, f Files) *Dir {
	n := &Dir{parent: d, rel: rel, custom: f.Custom, ign: f.Ignore, git: f.Git, exclude: f.Exclude, hasGit: f.HasGit}
	n.anyGit = f.HasGit || (d != nil && d.anyGit)
	if n.custom.Len() == 0 && n.ign.Len() == 0 && n.git.Len() == 0 && n.exclude.Len() == 0 && !n.hasGit && d != nil && n.anyGit == d.anyGit {
		// Nothing new here: share the parent so matching walks fewer links.
		return d
	}
	return n
}

// Above returns a Dir for a directory above the walk root; down is the path
// from that directory to the root ("proj/src"). Call it from the outermost
// directory inwards.
func (d *Dir) Above(down string, f Files) *Dir {
	n := d.Child("", f)
	if n == d {
		return d
	}
	n.isAbove = true
	n.above = down + "/"
	return n
}

// AnyGit reports whether this directory or one above it holds .git, which
// is when ripgrep applies gitignore rules.
func (d *Dir) AnyGit() bool { return d != nil && d.anyGit }

// Match decides rel (relative to the walk root) against the chain, with
// ripgrep's precedence: .rgignore, then .ignore, then .gitignore, then
// .git/info/exclude, the innermost directory first within each kind;
// gitignore kinds only inside a repository and not above its root.
func (d *Dir) Match(rel string, isDir bool) Decision {
	var mCustom, mIgn, mGit, mExcl Decision
	anyGit := d.AnyGit()
	sawGit := false
	for n := d; n != nil; n = n.parent {
		var sub string
		if n.isAbove {
			sub = n.above + rel
		} else if n.rel == "" {
			sub = rel
		} else {
			sub = rel[len(n.rel)+1:]
		}
		if mCustom == None && n.custom != nil {
			mCustom, _ = n.custom.Match(sub, isDir)
		}
		if mIgn == None && n.ign != nil {
			mIgn, _ = n.ign.Match(sub, isDir)
		}
		if anyGit && !sawGit {
			if mGit == None && n.git != nil {
				mGit, _ = n.git.Match(sub, isDir)
			}
			if mExcl == None && n.exclude != nil {
				mExcl, _ = n.exclude.Match(sub, isDir)
			}
		}
		sawGit = sawGit || n.hasGit
	}
	for _, m := range [...]Decision{mCustom, mIgn, mGit, mExcl} {
		if m != None {
			return m
		}
	}
	return None
}
