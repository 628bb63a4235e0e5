package dispatch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubcommandsAreNoTools: install and up are buzzbox's own subcommands,
// in their own table: `buzzbox install DIR` lays no link called install or
// up, a link called up is no tool (it prints the overview, as an unknown
// name does), no subcommand shares a name with a tool, and --help lists
// each subcommand's usage line and summary.
func TestSubcommandsAreNoTools(t *testing.T) {
	subs := Subcommands()
	if len(subs) != 2 || subs[0].Name != "install" || subs[1].Name != "up" {
		t.Fatalf("Subcommands() = %v; want install, then up", subs)
	}
	for _, sub := range subs {
		if _, ok := Lookup(sub.Name); ok {
			t.Errorf("subcommand %q is also a tool", sub.Name)
		}
		if sub.Summary == "" || sub.Args == "" || sub.Main == nil {
			t.Errorf("subcommand %q lacks a summary, usage or entry", sub.Name)
		}
	}
	dir := filepath.Join(t.TempDir(), "bin")
	if code, _, errOut := runIn(t, "", "buzzbox", "install", dir); code != ExitOK {
		t.Fatalf("install = %d, %s", code, errOut)
	}
	for _, sub := range subs {
		if _, err := os.Lstat(filepath.Join(dir, sub.Name)); err == nil {
			t.Errorf("install laid a link called %s", sub.Name)
		}
	}
	_, help, _ := runIn(t, "", "buzzbox", "--help")
	for _, line := range []string{
		"  buzzbox install [--force] [--copy] DIR   lay one link per tool in DIR\n",
		"  buzzbox up [--listen ADDRESS] [--public-url URL] [--dir DIR]\n" + strings.Repeat(" ", 43) + "start a local workspace: relay, harness, agent\n",
	} {
		if !strings.Contains(help, line) {
			t.Errorf("buzzbox --help lacks %q:\n%s", line, help)
		}
	}
	if code, out, _ := runIn(t, "", "/bin/up"); code != ExitOK || out != help {
		t.Errorf("a link called up = %d, %q; want the overview, as for any name that is no tool", code, out)
	}
}
