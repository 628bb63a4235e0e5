package statedir

import (
	"strings"
	"testing"
)

func TestRoot(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/h"}, "/x/state/buzzbox"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/h"}, "/h/.local/state/buzzbox"},
		{map[string]string{"HOME": "/h"}, "/h/.local/state/buzzbox"},
		{map[string]string{}, ""},
	} {
		got, err := Root(func(k string) string { return c.env[k] })
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("Root(%v) = %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}

func TestName(t *testing.T) {
	a, b := Name("/home/u/proj"), Name("/srv/proj")
	if a == b || !strings.HasPrefix(a, "proj-") || len(a) != len("proj-")+hashChars {
		t.Errorf("Name = %q, %q; want distinct proj-<hash> names", a, b)
	}
	if Name("/home/u/proj/") != a {
		t.Errorf("a trailing slash changes the name")
	}
	if n := Name("/"); !strings.HasPrefix(n, "_-") && !strings.HasPrefix(n, "root-") {
		t.Errorf("Name(/) = %q", n)
	}
	if n := Name("/a/.hidden dir"); !strings.HasPrefix(n, "hidden_dir-") {
		t.Errorf("Name = %q; want the leading dot dropped and the space replaced", n)
	}
}
