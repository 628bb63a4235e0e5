package rustregex

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/translate/*.txtar with the translator's output")

// goldenDir holds the golden translations: each .txtar file is a list of
// cases, each an entry "pattern" (or "pattern -i", matched ignoring case)
// holding the pattern, then "re2" holding its Go translation or "error"
// holding ripgrep 13's error text for it. An entry's final newline is not
// part of its text. The error texts were written by ripgrep 13 itself
// (rg -e PATTERN, its standard error); -update rewrites the expectations
// from the translator, so review the diff against them.
const goldenDir = "testdata/translate"

// goldenCase is one pattern of a golden file and what it must give.
type goldenCase struct {
	pattern string
	fold    bool
	kind    string // "re2" or "error"
	want    string
}

// TestGoldenTranslations checks every golden file: each pattern
// translates to its re2 text or fails with its error text, and a file
// or an entry no case reads fails the run.
func TestGoldenTranslations(t *testing.T) {
	entries, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatalf("read %s: %v", goldenDir, err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s holds no golden files", goldenDir)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".txtar") {
			t.Errorf("%s/%s: not a golden file (.txtar); no test reads it", goldenDir, name)
			continue
		}
		t.Run(strings.TrimSuffix(name, ".txtar"), func(t *testing.T) {
			checkGolden(t, filepath.Join(goldenDir, name))
		})
	}
}

func checkGolden(t *testing.T, path string) {
	ar, err := parseTxtar(path)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	cases, err := goldenCases(ar)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(cases) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	var files []txtarFile
	for _, c := range cases {
		kind, got := translated(c.pattern, c.fold)
		if *update {
			name := "pattern"
			if c.fold {
				name += " -i"
			}
			files = append(files,
				txtarFile{Name: name, Data: []byte(c.pattern + "\n")},
				txtarFile{Name: kind, Data: []byte(got + "\n")})
			continue
		}
		if kind != c.kind || got != c.want {
			t.Errorf("Translate(%q, fold=%v):\n%s:\n%s\nwant %s:\n%s", c.pattern, c.fold, kind, got, c.kind, c.want)
		}
	}
	if *update {
		ar.Files = files
		if err := os.WriteFile(path, ar.format(), 0o644); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
	}
}

// translated gives the golden form of what Translate does with pattern.
func translated(pattern string, fold bool) (kind, text string) {
	tr, err := Translate(pattern, fold)
	var perr *ParseError
	switch {
	case errors.As(err, &perr), errors.Is(err, ErrNewline):
		return "error", err.Error()
	case err != nil:
		return "error", "unexpected error type: " + err.Error()
	}
	return "re2", tr.RE2
}

// goldenCases reads the cases of a golden archive. Under -update a
// pattern may come without its expectation.
func goldenCases(ar *txtarArchive) ([]goldenCase, error) {
	var cases []goldenCase
	for i := 0; i < len(ar.Files); i++ {
		f := ar.Files[i]
		var c goldenCase
		switch f.Name {
		case "pattern":
		case "pattern -i":
			c.fold = true
		default:
			return nil, errors.New("entry " + strconv.Quote(f.Name) + " belongs to no case: want \"pattern\" or \"pattern -i\" before it")
		}
		c.pattern = strings.TrimSuffix(string(f.Data), "\n")
		if i+1 < len(ar.Files) && (ar.Files[i+1].Name == "re2" || ar.Files[i+1].Name == "error") {
			i++
			c.kind = ar.Files[i].Name
			c.want = string(bytes.TrimSuffix(ar.Files[i].Data, []byte("\n")))
		} else if !*update {
			return nil, errors.New("pattern " + strconv.Quote(c.pattern) + " has no \"re2\" or \"error\" entry after it (go test -update writes it)")
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// txtarArchive is a txtar file (the format of golang.org/x/tools/txtar):
// a comment, then entries each opened by a line "-- NAME --".
type txtarArchive struct {
	Comment []byte
	Files   []txtarFile
}

type txtarFile struct {
	Name string
	Data []byte
}

func parseTxtar(path string) (*txtarArchive, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ar := &txtarArchive{}
	cur := &ar.Comment
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if name, ok := txtarMarker(line); ok {
			ar.Files = append(ar.Files, txtarFile{Name: name})
			cur = &ar.Files[len(ar.Files)-1].Data
			continue
		}
		*cur = append(append(*cur, line...), '\n')
	}
	return ar, nil
}

// txtarMarker reads a line "-- NAME --".
func txtarMarker(line []byte) (string, bool) {
	s := string(line)
	if !strings.HasPrefix(s, "-- ") || !strings.HasSuffix(s, " --") || len(s) < len("-- x --") {
		return "", false
	}
	return strings.TrimSpace(s[3 : len(s)-3]), true
}

func (ar *txtarArchive) format() []byte {
	var b bytes.Buffer
	b.Write(ar.Comment)
	for _, f := range ar.Files {
		b.WriteString("-- " + f.Name + " --\n")
		b.Write(f.Data)
		if len(f.Data) > 0 && f.Data[len(f.Data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}
