package ignore

import "strings"

// Dir holds the ignore files found in one directory of a walk. Dirs link to
// their parent, so a walk shares one chain per branch and never copies it.
// A Dir is immutable once built and safe to share between goroutines.
type Dir struct {
	parent *Dir
	// rel is this directory's path below the walk root ("" for the root).
	rel string
	// above is set for directories above the walk root: the path from this
	// directory down to the root it was first built for, ending in '/'.
	above   string
	isAbove bool
	// absDir is an above directory's absolute path, for absolute paths.
	absDir string

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

// Above returns a Dir for the directory absDir above the walk root; down is
// the path from that directory to the root ("proj/src"). Call it from the
// outermost directory inwards.
func (d *Dir) Above(down, absDir string, f Files) *Dir {
	n := d.Child("", f)
	if n == d {
		return d
	}
	n.isAbove = true
	n.above = down + "/"
	n.absDir = absDir
	return n
}

// AnyGit reports whether this directory or one above it holds .git, which
// is when ripgrep applies gitignore rules.
func (d *Dir) AnyGit() bool { return d != nil && d.anyGit }

// Match decides rel (relative to the walk root; display is the path as
// printed) against the chain, with
// ripgrep's precedence: .rgignore, then .ignore, then .gitignore, then
// .git/info/exclude, the innermost directory first within each kind;
// gitignore kinds only inside a repository and not above its root.
//
// Directories above the root see what ripgrep 13's do: the printed path
// (without "./") appended to the root the directory was first built for.
// For a root such as "docs" that doubles it ("docs/docs/x"), so anchored
// patterns of a parent .gitignore miss, as they do in ripgrep 13; absolute
// roots are matched correctly.
func (d *Dir) Match(rel, display string, isDir bool) Decision {
	var mCustom, mIgn, mGit, mExcl Decision
	anyGit := d.AnyGit()
	sawGit := false
	for n := d; n != nil; n = n.parent {
		var sub string
		if n.isAbove {
			if strings.HasPrefix(display, "/") {
				sub = strings.TrimPrefix(strings.TrimPrefix(display, n.absDir), "/")
			} else {
				sub = n.above + strings.TrimPrefix(display, "./")
			}
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
