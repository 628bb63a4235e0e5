package devmcp

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseSandboxArgs: the sandbox entry's command line never panics,
// refuses relative paths and unknown options, and reads back exactly what
// sandboxPolicy.args writes.
func FuzzParseSandboxArgs(f *testing.F) {
	f.Add("--ro\x00/a\x00--rw\x00/b\x00--hide\x00/c\x00--hide-prefix\x00/tmp/x-\x00--\x00/bin/sh\x00-c\x00true")
	f.Add("--own-proc\x00--\x00sh")
	f.Add("--ro\x00rel\x00--\x00sh")
	f.Add("--\x00")
	f.Add("--bogus\x00/x\x00--\x00sh")
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		p, argv, err := parseSandboxArgs(args)
		if err != nil {
			return
		}
		if len(argv) == 0 {
			t.Fatalf("parse(%q) = no command and no error", args)
		}
		for _, list := range [][]string{p.read, p.write, p.hide, p.hidePrefix} {
			for _, path := range list {
				if !strings.HasPrefix(path, "/") {
					t.Fatalf("parse(%q) accepted relative path %q", args, path)
				}
			}
		}
		round := p.args()
		if p.ownProc {
			round = append([]string{ownProcArg}, round...)
		}
		if p.userNS {
			round = append([]string{userNSArg}, round...)
		}
		if p.reap {
			round = append([]string{reapArg}, round...)
		}
		q, argv2, err := parseSandboxArgs(append(round, argv...))
		if err != nil || !slices.Equal(argv, argv2) || !slices.Equal(p.read, q.read) || !slices.Equal(p.write, q.write) ||
			!slices.Equal(p.hide, q.hide) || !slices.Equal(p.hidePrefix, q.hidePrefix) || p.ownProc != q.ownProc || p.userNS != q.userNS || p.reap != q.reap {
			t.Fatalf("round trip of %q: %+v %q, %v; want %+v %q", args, q, argv2, err, p, argv)
		}
	})
}

// TestSecretName pins the scrubbed name patterns.
func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "OPENAI_COMPAT_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true,
		"DB_PASSWORD": true, "my_client_secret": true, "SSH_PRIVATE_KEY": true, "NOSTR_PRIVATE_KEY": true, "API_KEY": true,
		"AWS_ACCESS_KEY_ID": true, "PATH": false, "HOME": false, "BUZZ_RELAY_URL": false, "TOKENIZERS_PARALLELISM": false,
		"GIT_CONFIG_COUNT": false, "BUZZ_AUTH_TAG": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v; want %v", name, got, want)
		}
	}
	kept, dropped := scrubEnv([]string{"BUZZ_PRIVATE_KEY=x", "GITHUB_TOKEN=y", "NPM_TOKEN=z", "PATH=/bin"}, "GITHUB_TOKEN, ")
	if !slices.Equal(kept, []string{"BUZZ_PRIVATE_KEY=x", "GITHUB_TOKEN=y", "PATH=/bin"}) || !slices.Equal(dropped, []string{"NPM_TOKEN"}) {
		t.Errorf("scrubEnv = %q, dropped %q", kept, dropped)
	}
}
