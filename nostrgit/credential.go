package nostrgit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"

	"github.com/nbd-wtf/go-nostr"
)

// Frozen texts of git-credential-nostr (spec §1.3, §3.3); tests pin them.
const (
	msgNoKeyCredential = "no nostr key configured. Set $NOSTR_PRIVATE_KEY or git config nostr.keyfile"
	msgNoProtocol      = "missing protocol in credential request"
	msgNoHost          = "missing host in credential request"
	msgNoPath          = "credential.useHttpPath must be true for NIP-98 auth"
)

// basicUser is the user name sent with the token as Basic password; the
// server ignores it.
const basicUser = "nostr"

// credentialRequest is what git wrote on stdin.
type credentialRequest struct {
	authtype  bool   // capability[]=authtype: git ≥ 2.46 takes a non-Basic credential
	protocol  string // "" when absent
	host      string // may carry :port
	path      string // present only with credential.useHttpPath
	hasPath   bool
	challenge string // first wwwauth[] value starting "Nostr "; "" if none
	anyWWW    bool   // some wwwauth[] line was sent (git ≥ 2.41)
}

// readCredentialRequest reads key=value lines up to the first empty line or
// EOF, at most maxCredentialInputBytes.
func readCredentialRequest(r io.Reader) (credentialRequest, error) {
	var req credentialRequest
	lr := &io.LimitedReader{R: r, N: maxCredentialInputBytes + 1}
	br := bufio.NewReader(lr)
	for {
		line, err := br.ReadString('\n')
		if lr.N <= 0 {
			return req, fmt.Errorf("credential request is larger than %d bytes", maxCredentialInputBytes)
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			return req, nil // blank line or EOF ends the request
		}
		k, v, _ := strings.Cut(line, "=")
		switch k {
		case "capability[]":
			if v == "authtype" {
				req.authtype = true
			}
		case "protocol":
			req.protocol = v
		case "host":
			req.host = v
		case "path":
			req.path, req.hasPath = v, true
		case "wwwauth[]":
			req.anyWWW = true
			if req.challenge == "" && strings.HasPrefix(v, nip98.Scheme+" ") {
				req.challenge = v
			}
		}
		if err == io.EOF {
			return req, nil
		}
		if err != nil {
			return req, fmt.Errorf("read credential request: %w", err)
		}
	}
}

// challengeMethod extracts method="X" from a `Nostr k="v", …` challenge.
func challengeMethod(ch string) (string, bool) {
	params := strings.TrimPrefix(ch, nip98.Scheme+" ")
	for _, p := range strings.Split(params, ",") {
		v, ok := strings.CutPrefix(strings.TrimSpace(p), "method=")
		if !ok {
			continue
		}
		if len(v) >= 3 && v[0] == '"' && v[len(v)-1] == '"' && !strings.ContainsAny(v[1:len(v)-1], "\" \t") {
			return v[1 : len(v)-1], true
		}
		return "", false
	}
	return "", false
}

// looksLikeGitRoute reports whether path has the relay's git route shape,
// git/<owner>/<repo>, anywhere in it, the owner spelled any way the relay
// takes it (hex in either case, or an npub). Without a challenge (git
// before 2.41) it is all we have to tell a relay remote from any other.
func looksLikeGitRoute(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := 0; i+2 < len(segs); i++ {
		if segs[i] != "git" || segs[i+2] == "" {
			continue
		}
		if _, err := nostrkey.ParsePublic(segs[i+1]); err == nil {
			return true
		}
	}
	return false
}

// CredentialMain is git-credential-nostr, git's credential helper for relay
// remotes: `get` answers with a fresh NIP-98 token for the repository root
// URL; `store`, `erase` and anything else do nothing.
func CredentialMain(ctx context.Context, args []string, env proc.Env) int {
	if wantsHelp(args, env.Out(), credentialUsage) {
		return exitOK
	}
	action := "get"
	if len(args) > 0 {
		action = args[0]
	}
	if action != "get" {
		io.Copy(io.Discard, io.LimitReader(env.In(), maxCredentialInputBytes))
		return exitOK
	}
	req, err := readCredentialRequest(env.In())
	if err != nil {
		return fatal(env, err.Error())
	}
	method := "GET"
	switch {
	case req.challenge != "":
		m, ok := challengeMethod(req.challenge)
		if !ok {
			return exitOK // spec §3.3 step 3: graceful decline
		}
		method = m
	case req.authtype || req.anyWWW:
		// A modern git showed us the challenges and none is ours: not a
		// relay remote, so stay silent and let other helpers answer.
		return exitOK
	case !looksLikeGitRoute(req.path):
		// Old git (no challenges, no authtype): the spec's empty answer.
		fmt.Fprintln(env.Out())
		return exitOK
	}
	switch {
	case req.protocol == "":
		return fatal(env, msgNoProtocol)
	case req.host == "":
		return fatal(env, msgNoHost)
	case !req.hasPath:
		return fatal(env, msgNoPath)
	}
	conf := newGitConfig(ctx, env)
	loaded, err := nostrkey.ForGit(env, conf.keyFile, nostrkey.FileRules{Warn: env.Err()})
	if errors.Is(err, nostrkey.ErrNoKey) {
		return fatal(env, msgNoKeyCredential)
	}
	if err != nil {
		return fatal(env, err.Error())
	}
	key := loaded.Secret
	defer key.Zero()
	for _, w := range loaded.Warnings {
		fmt.Fprintln(env.Err(), w)
	}
	var extra nostr.Tags
	if tag, err := credentialAuthTag(conf); err != nil {
		return fatal(env, err.Error())
	} else if tag != nil {
		extra = nostr.Tags{tag}
	}
	url := req.protocol + "://" + req.host + "/" + strings.TrimPrefix(nip98.RepoRoot(req.path), "/")
	tok, err := nip98.Token(key, url, method, nip98.Options{Tags: extra})
	if err != nil {
		return fatal(env, err.Error())
	}
	var answer string
	if req.authtype {
		answer = "capability[]=authtype\nauthtype=" + nip98.Scheme + "\ncredential=" + tok + "\nephemeral=true\nquit=true\n\n"
	} else {
		// Git before 2.46 can only send Basic; the relay takes the token as
		// the password.
		answer = "username=" + basicUser + "\npassword=" + tok + "\nquit=true\n\n"
	}
	if _, err := io.WriteString(env.Out(), answer); err != nil {
		return fatal(env, "write answer: "+err.Error())
	}
	return exitOK
}

// credentialAuthTag loads the NIP-OA tag, checking its shape only (spec
// §3.3 step 6): the relay checks the signature. nil means none configured.
func credentialAuthTag(conf *gitConfig) (nostr.Tag, error) {
	raw, source, err := conf.authTag()
	if err != nil || raw == "" {
		return nil, err
	}
	tag, err := nipoa.ParseShape(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return tag, nil
}
