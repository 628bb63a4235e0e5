package nostrgit

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/proc"
	"buzzbox/internal/workspace/nip98"

	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

const validRequest = "capability[]=authtype\ncapability[]=state\nprotocol=https\nhost=relay.example.com\npath=git/owner/repo.git/info/refs\nwwwauth[]=Nostr realm=\"buzz\", method=\"GET\"\n\n"

// answerLines splits the helper's answer into key → value and checks the
// final empty line.
func answerLines(t *testing.T, out string) map[string]string {
	t.Helper()
	if !strings.HasSuffix(out, "\n\n") {
		t.Fatalf("answer %q does not end with an empty line", out)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n\n"), "\n") {
		k, v, _ := strings.Cut(l, "=")
		if _, dup := m[k]; dup {
			t.Fatalf("answer repeats %s", k)
		}
		m[k] = v
	}
	return m
}

func tokenEvent(t *testing.T, tok string) *nostr.Event {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("token is not standard base64: %v", err)
	}
	var evt nostr.Event
	if err := json.Unmarshal(raw, &evt); err != nil {
		t.Fatal(err)
	}
	if ok, _ := evt.CheckSignature(); !ok || !evt.CheckID() {
		t.Fatalf("token event does not verify: %s", raw)
	}
	return &evt
}

func TestCredentialGet(t *testing.T) {
	nsec, _ := nip19.EncodePrivateKey(k3)
	env := signEnv(t, "NOSTR_PRIVATE_KEY="+nsec)
	out, errOut, code := run(t, CredentialMain, env, validRequest, "get")
	if code != 0 || errOut != "" {
		t.Fatalf("get: exit %d, stderr %q", code, errOut)
	}
	// Pinned: the exact answer shape git ≥ 2.46 reads.
	m := answerLines(t, out)
	if m["capability[]"] != "authtype" || m["authtype"] != "Nostr" || m["ephemeral"] != "true" || m["quit"] != "true" || len(m) != 5 {
		t.Errorf("answer %q", out)
	}
	if !strings.HasPrefix(out, "capability[]=authtype\nauthtype=Nostr\ncredential=") || !strings.HasSuffix(out, "\nephemeral=true\nquit=true\n\n") {
		t.Errorf("answer order %q", out)
	}
	evt := tokenEvent(t, m["credential"])
	if evt.Kind != 27235 || evt.Content != "" || evt.PubKey != pk3 {
		t.Errorf("event %v", evt)
	}
	if u := evt.Tags.Find("u"); u == nil || u[1] != "https://relay.example.com/git/owner/repo.git" {
		t.Errorf("u tag %v", u)
	}
	if m := evt.Tags.Find("method"); m == nil || m[1] != "GET" {
		t.Errorf("method tag %v", m)
	}
	if d := time.Since(evt.CreatedAt.Time()); d > 5*time.Second || d < -5*time.Second {
		t.Errorf("created_at %v is %v from now", evt.CreatedAt, d)
	}
	if evt.Tags.Find("payload") != nil || evt.Tags.Find("nonce") != nil {
		t.Errorf("git token carries payload or nonce: %v", evt.Tags)
	}
	// The relay side accepts it for the GET and for the POST that follows.
	v := nip98.Verifier{}
	for _, p := range []string{"/git/owner/repo.git/info/refs?service=git-upload-pack", "/git/owner/repo.git/git-upload-pack"} {
		if _, err := v.Verify("Nostr "+m["credential"], nip98.Expect{URL: "https://relay.example.com" + nip98.RepoRoot(p)}); err != nil {
			t.Errorf("relay-side Verify for %s: %v", p, err)
		}
	}
	if strings.Contains(out+errOut, k3) || strings.Contains(out+errOut, nsec) {
		t.Error("the private key was printed")
	}
}

func TestCredentialURLs(t *testing.T) {
	env := signEnv(t, "NOSTR_PRIVATE_KEY="+k3)
	for _, c := range []struct{ host, path, want string }{
		{"relay.example.com", "git/owner/repo.git", "https://relay.example.com/git/owner/repo.git"},
		{"relay.example.com", "git/owner/repo.git/git-receive-pack", "https://relay.example.com/git/owner/repo.git"},
		{"relay.example.com:8443", "git/owner/repo.git/info/refs", "https://relay.example.com:8443/git/owner/repo.git"},
	} {
		in := strings.NewReplacer("host=relay.example.com\n", "host="+c.host+"\n", "path=git/owner/repo.git/info/refs\n", "path="+c.path+"\n").Replace(validRequest)
		out, errOut, code := run(t, CredentialMain, env, in, "get")
		if code != 0 {
			t.Errorf("%s %s: exit %d %s", c.host, c.path, code, errOut)
			continue
		}
		evt := tokenEvent(t, answerLines(t, out)["credential"])
		if u := evt.Tags.Find("u"); u[1] != c.want {
			t.Errorf("%s %s: u = %s; want %s", c.host, c.path, u[1], c.want)
		}
	}
}

func TestCredentialDeclines(t *testing.T) {
	noKey := signEnv(t)
	withKey := signEnv(t, "NOSTR_PRIVATE_KEY="+k3)
	drop := func(s, line string) string { return strings.Replace(s, line+"\n", "", 1) }
	noWWW := drop(validRequest, `wwwauth[]=Nostr realm="buzz", method="GET"`)
	cases := []struct {
		name    string
		env     proc.Env
		in      string
		args    []string
		code    int
		out     string
		errHas  string
		errNone bool
	}{
		{"no wwwauth", noKey, noWWW, []string{"get"}, 0, "", "", true},
		{"no method", withKey, strings.Replace(validRequest, `, method="GET"`, "", 1), []string{"get"}, 0, "", "", true},
		{"basic challenge", withKey, strings.Replace(validRequest, `Nostr realm="buzz", method="GET"`, `Basic realm="x"`, 1), []string{"get"}, 0, "", "", true},
		{"old git, other remote", withKey, "protocol=https\nhost=github.com\npath=o/r.git\n\n", nil, 0, "\n", "", true},
		{"no path", withKey, drop(validRequest, "path=git/owner/repo.git/info/refs"), []string{"get"}, 1, "", "error: " + msgNoPath + "\n", false},
		{"no host", withKey, drop(validRequest, "host=relay.example.com"), []string{"get"}, 1, "", "error: " + msgNoHost + "\n", false},
		{"no protocol", withKey, drop(validRequest, "protocol=https"), []string{"get"}, 1, "", "error: " + msgNoProtocol + "\n", false},
		{"no key", noKey, validRequest, []string{"get"}, 1, "", "error: " + msgNoKeyCredential + "\n", false},
		{"bad key", signEnv(t, "NOSTR_PRIVATE_KEY=nope"), validRequest, []string{"get"}, 1, "", "error: invalid nostr private key", false},
		{"bad auth tag", signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG=not-json"), validRequest, []string{"get"}, 1, "", "invalid NIP-OA auth tag", false},
		{"store", withKey, validRequest, []string{"store"}, 0, "", "", true},
		{"erase", withKey, validRequest, []string{"erase"}, 0, "", "", true},
		{"unknown action", withKey, validRequest, []string{"frobnicate"}, 0, "", "", true},
	}
	for _, c := range cases {
		out, errOut, code := run(t, CredentialMain, c.env, c.in, c.args...)
		if code != c.code || out != c.out {
			t.Errorf("%s: exit %d, stdout %q; want %d, %q", c.name, code, out, c.code, c.out)
		}
		if c.errNone && errOut != "" {
			t.Errorf("%s: stderr %q; want none", c.name, errOut)
		}
		if c.errHas != "" && !strings.Contains(errOut, c.errHas) {
			t.Errorf("%s: stderr %q; want %q", c.name, errOut, c.errHas)
		}
	}
}

func TestCredentialBasicFallback(t *testing.T) {
	env := signEnv(t, "NOSTR_PRIVATE_KEY="+k3)
	route := "protocol=http\nhost=127.0.0.1:9\npath=git/" + pk3 + "/repo.git/info/refs\n\n"
	for name, in := range map[string]string{
		"git 2.41-2.45 (challenge, no authtype)": drop1(validRequest, "capability[]=authtype"),
		"git < 2.41 (route path only)":           route,
	} {
		out, errOut, code := run(t, CredentialMain, env, in, "get")
		if code != 0 {
			t.Errorf("%s: exit %d %s", name, code, errOut)
			continue
		}
		// Pinned: git < 2.46 reads username/password.
		m := answerLines(t, out)
		if m["username"] != basicUser || m["quit"] != "true" || len(m) != 3 || !strings.HasPrefix(out, "username=nostr\npassword=") {
			t.Errorf("%s: answer %q", name, out)
		}
		evt := tokenEvent(t, m["password"])
		basic := "Basic " + base64.StdEncoding.EncodeToString([]byte(m["username"]+":"+m["password"]))
		u := evt.Tags.Find("u")[1]
		if _, err := (&nip98.Verifier{}).Verify(basic, nip98.Expect{URL: u}); err != nil {
			t.Errorf("%s: Basic form refused: %v", name, err)
		}
	}
}

func drop1(s, line string) string { return strings.Replace(s, line+"\n", "", 1) }

func TestCredentialKeySources(t *testing.T) {
	// BUZZ_PRIVATE_KEY alone.
	out, _, code := run(t, CredentialMain, signEnv(t, "BUZZ_PRIVATE_KEY="+k1), validRequest, "get")
	if code != 0 || tokenEvent(t, answerLines(t, out)["credential"]).PubKey != pk1 {
		t.Errorf("BUZZ_PRIVATE_KEY: exit %d %q", code, out)
	}
	// Both set and different: NOSTR_PRIVATE_KEY wins with a warning.
	out, errOut, code := run(t, CredentialMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_PRIVATE_KEY="+k1), validRequest, "get")
	if code != 0 || tokenEvent(t, answerLines(t, out)["credential"]).PubKey != pk3 || !strings.HasPrefix(errOut, "warning:") {
		t.Errorf("both keys: exit %d, stderr %q", code, errOut)
	}
	// Key file through git config, with permission rules.
	env := signEnv(t)
	keyfile := filepath.Join(env.Dir, "key")
	nsec, _ := nip19.EncodePrivateKey(k3)
	os.WriteFile(keyfile, []byte(nsec+"\n"), 0o600)
	gitCmd(t, env.Environ, env.Dir, "config", "--global", "nostr.keyfile", keyfile)
	for mode, ok := range map[os.FileMode]bool{0o644: false, 0o600: true, 0o400: true} {
		os.Chmod(keyfile, mode)
		out, errOut, code := run(t, CredentialMain, env, validRequest, "get")
		if ok && (code != 0 || tokenEvent(t, answerLines(t, out)["credential"]).PubKey != pk3) {
			t.Errorf("keyfile %o: exit %d %s", mode, code, errOut)
		}
		if !ok && (code != 1 || !strings.Contains(errOut, "insecure permissions") || !strings.Contains(errOut, "chmod 600 "+keyfile)) {
			t.Errorf("keyfile %o: exit %d %s", mode, code, errOut)
		}
	}
	// An auth tag is passed through, shape-checked only.
	tag := `["auth","` + pk1 + `","","` + strings.Repeat("0", 128) + `"]`
	out, errOut, code = run(t, CredentialMain, signEnv(t, "NOSTR_PRIVATE_KEY="+k3, "BUZZ_AUTH_TAG="+tag), validRequest, "get")
	if code != 0 {
		t.Fatalf("auth tag: exit %d %s", code, errOut)
	}
	evt := tokenEvent(t, answerLines(t, out)["credential"])
	if got := evt.Tags.Find("auth"); got == nil || len(got) != 4 || got[1] != pk1 || got[3] != strings.Repeat("0", 128) {
		t.Errorf("auth tag in event: %v", got)
	}
}

func FuzzCredentialRequest(f *testing.F) {
	f.Add(validRequest)
	f.Add("wwwauth[]=Nostr method=\"\"\n")
	f.Add("path=git/" + pk3 + "/r\n")
	f.Fuzz(func(t *testing.T, in string) {
		req, err := readCredentialRequest(strings.NewReader(in))
		if err != nil {
			return
		}
		if req.challenge != "" {
			challengeMethod(req.challenge)
		}
		looksLikeGitRoute(req.path)
	})
}

// TestNeverPrintsKey runs the helpers' success and failure paths with a key
// loaded and checks that neither stream ever shows it.
func TestNeverPrintsKey(t *testing.T) {
	const secret = "7f7ff03d123792d6ac594bfa67bf6d0c0ab55b6b1fdb6249303fe861f1ccba9a"
	nsec, _ := nip19.EncodePrivateKey(secret)
	for _, keyEnv := range []string{"NOSTR_PRIVATE_KEY=" + secret, "BUZZ_PRIVATE_KEY=" + nsec} {
		env := signEnv(t, keyEnv, "BUZZ_AUTH_TAG="+authTagV)
		runs := [][]string{
			{validRequest, "get"}, {drop1(validRequest, "capability[]=authtype"), "get"},
			{drop1(validRequest, "path=git/owner/repo.git/info/refs"), "get"},
		}
		var all strings.Builder
		for _, r := range runs {
			out, errOut, _ := run(t, CredentialMain, env, r[0], r[1])
			all.WriteString(out + errOut)
		}
		for _, args := range [][]string{{"-bsau", pk3}, {"-bsau", pk1}, {"-bsau", nsec}, {"--status-fd=1", "-bsau", ""}} {
			out, errOut, _ := run(t, SignMain, env, payloadV, args...)
			all.WriteString(out + errOut)
		}
		if s := all.String(); strings.Contains(s, secret) || strings.Contains(s, nsec[5:30]) {
			t.Errorf("a helper printed the key:\n%s", s)
		}
	}
}
