package nostrgit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/proc"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nipgs"
	"buzzbox/internal/workspace/nipoa"
)

// Exit codes of git-sign-nostr: git only tells 0 from the rest.
const (
	exitOK   = 0
	exitFail = 1
)

// Frozen texts: git and people parse them, and tests pin them.
const (
	msgNoKeySigner = "no key available: set NOSTR_PRIVATE_KEY, BUZZ_PRIVATE_KEY, or git config nostr.keyfile"
	msgNoMode      = "must specify either -bsau <key> (sign) or --verify <file> (verify)"
	errsigUnknown  = "0000000000000000"
)

// signArgs is the command line git hands the program.
type signArgs struct {
	statusFD    int    // 0 when --status-fd was not given
	signing     bool   // -bsau seen
	keyID       string // the -bsau argument
	verifying   bool   // --verify seen
	sigFile     string // the --verify argument
	stdinMarker bool   // a lone "-" was given
}

// parseSignArgs reads the arguments of spec §5.2. Unknown ones are ignored
// for forward compatibility.
func parseSignArgs(args []string) (signArgs, error) {
	var a signArgs
	fdSeen := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", arg)
			}
			i++
			return args[i], nil
		}
		switch {
		case arg == "--status-fd" || strings.HasPrefix(arg, "--status-fd="):
			v, ok := strings.CutPrefix(arg, "--status-fd=")
			if !ok {
				var err error
				if v, err = next(); err != nil {
					return a, err
				}
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return a, fmt.Errorf("--status-fd %q must be an integer of 1 or more (0 is stdin, which carries the payload)", v)
			}
			if fdSeen {
				return a, errors.New("--status-fd given twice")
			}
			fdSeen, a.statusFD = true, n
		case arg == "-bsau":
			if a.signing {
				return a, errors.New("-bsau given twice")
			}
			v, err := next()
			if err != nil {
				return a, err
			}
			a.signing, a.keyID = true, v
		case arg == "--verify":
			if a.verifying {
				return a, errors.New("--verify given twice")
			}
			v, err := next()
			if err != nil {
				return a, err
			}
			a.verifying, a.sigFile = true, v
		case arg == "-":
			a.stdinMarker = true
		}
	}
	switch {
	case a.signing && a.verifying:
		return a, errors.New("cannot both sign (-bsau) and verify (--verify)")
	case !a.signing && !a.verifying:
		return a, errors.New(msgNoMode)
	case a.verifying && !a.stdinMarker:
		return a, errors.New("--verify <file> needs a separate - argument (payload on stdin)")
	}
	return a, nil
}

// SignMain is git-sign-nostr, git's gpg.x509.program: it signs a commit or
// tag with the Nostr key (NIP-GS v1) or verifies such a signature, speaking
// the gpg status protocol git parses.
func SignMain(ctx context.Context, args []string, env proc.Env) int {
	if wantsHelp(args, env.Out(), signUsage) {
		return exitOK
	}
	a, err := parseSignArgs(args)
	if err != nil {
		return fatal(env, err.Error())
	}
	if a.signing {
		return sign(ctx, env, a)
	}
	return verify(ctx, env, a)
}

// fatal reports a fatal error the way git shows it: one error: line on
// stderr, nothing on stdout, exit 1.
func fatal(env proc.Env, msg string) int {
	fmt.Fprintf(env.Err(), "error: %s\n", msg)
	return exitFail
}

// statusTo returns the writer for status lines of fd.
func statusTo(env proc.Env, fd int) (io.Writer, bool) {
	switch fd {
	case 1:
		return env.Out(), true
	case 2:
		return env.Err(), true
	}
	if fdOpen(fd) {
		return fdWriter(fd), true
	}
	return nil, false
}

func sign(ctx context.Context, env proc.Env, a signArgs) int {
	status := env.Err()
	switch {
	case a.statusFD == 1:
		fmt.Fprintln(env.Err(), "warning: --status-fd=1 would mix status into the signature; writing status to stderr")
	case a.statusFD > 2:
		if w, ok := statusTo(env, a.statusFD); ok {
			status = w
		} else {
			fmt.Fprintf(env.Err(), "warning: --status-fd=%d is not open; writing status to stderr\n", a.statusFD)
		}
	}
	conf := newGitConfig(ctx, env)
	loaded, err := nostrkey.ForGit(env, conf.keyFile, nostrkey.FileRules{NoSymlink: true, OwnerOnly: true, Warn: env.Err()})
	if errors.Is(err, nostrkey.ErrNoKey) {
		return fatal(env, msgNoKeySigner)
	}
	if err != nil {
		return fatal(env, err.Error())
	}
	key := loaded.Secret
	defer key.Zero()
	for _, w := range loaded.Warnings {
		fmt.Fprintln(env.Err(), w)
	}
	pk := key.Public()
	// Spec §5.4 step 2: fail closed unless the -bsau key is ours.
	if id := strings.TrimSpace(a.keyID); id != "" {
		want, ok := normaliseKeyID(id)
		if !ok {
			return fatal(env, fmt.Sprintf("signing key argument (%s) is not a recognized key format (expected 64-char hex or npub1...); set git config user.signingkey %s", shownKeyID(id), pk.Hex()))
		}
		if want != pk.Hex() {
			return fatal(env, fmt.Sprintf("signing key argument (%s) does not match loaded key (%s)", id, pk.Hex()))
		}
	}
	t, err := nipgs.SigTime(time.Now().Unix())
	if err != nil {
		return fatal(env, "current "+err.Error())
	}
	attest, warn, err := signingAttestation(conf, pk, t)
	if err != nil {
		return fatal(env, err.Error())
	}
	if warn != "" {
		fmt.Fprintln(env.Err(), warn)
	}
	h := nipgs.NewHash(t, attest)
	n, err := io.Copy(h, io.LimitReader(env.In(), maxPayloadBytes+1))
	if err != nil {
		return fatal(env, "read payload from stdin: "+err.Error())
	}
	if n > maxPayloadBytes {
		return fatal(env, fmt.Sprintf("payload is larger than the %d-byte limit", maxPayloadBytes))
	}
	e, err := nipgs.Seal(key, h, t, attest)
	if err != nil {
		return fatal(env, err.Error())
	}
	if _, err := env.Out().Write(e.Armor()); err != nil {
		return fatal(env, "write signature: "+err.Error())
	}
	// Git needs SIG_CREATED after a newline (older git), hence BEGIN_SIGNING.
	fmt.Fprintf(status, "[GNUPG:] BEGIN_SIGNING\n[GNUPG:] SIG_CREATED D 8 1 00 %d %s\n", t, pk.Hex())
	return exitOK
}

// normaliseKeyID turns a -bsau or user.signingkey value into lower-case hex:
// npub1… is decoded, 64 hex is lower-cased, anything else is refused.
func normaliseKeyID(id string) (string, bool) {
	if strings.HasPrefix(strings.ToLower(id), "npub1") {
		h, err := nostrkey.NpubToHex(id)
		return h, err == nil
	}
	if len(id) == 64 && isHexFold(id) {
		return strings.ToLower(id), true
	}
	return "", false
}

// shownKeyID is id for a message, unless it is a secret key by mistake.
func shownKeyID(id string) string {
	if strings.HasPrefix(strings.ToLower(id), "nsec1") {
		return "an nsec1 secret key, not shown; user.signingkey takes the public key"
	}
	return id
}

func isHexFold(s string) bool { return nostrkey.IsLowerHex(strings.ToLower(s), len(s)) }

// signingAttestation loads and fully checks the NIP-OA tag for signing at t
// (spec §5.4 step 5). nil means none is configured.
func signingAttestation(conf *gitConfig, pk nostrkey.PublicKey, t uint32) (*nipgs.OA, string, error) {
	raw, source, err := conf.authTag()
	if err != nil || raw == "" {
		return nil, "", err
	}
	tag, err := nipoa.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", source, err)
	}
	if err := tag.Verify(pk); err != nil {
		return nil, "", fmt.Errorf("%s: %w; the configured %s is invalid or stale", source, err, workspace.EnvAuthTag)
	}
	if err := tag.CheckTime(int64(t)); err != nil {
		return nil, "", fmt.Errorf("%s: %w", source, err)
	}
	warn := ""
	if tag.KindClauses() {
		warn = "warning: " + source + " has kind= conditions, which git signatures do not check"
	}
	n := tag.Nostr()
	return &nipgs.OA{Owner: n[1], Conditions: n[2], Sig: n[3]}, warn, nil
}

// verify checks a stored signature against the payload on stdin (spec
// §5.5) and reports in gpg status lines.
func verify(ctx context.Context, env proc.Env, a signArgs) int {
	status := env.Err()
	if a.statusFD != 0 {
		w, ok := statusTo(env, a.statusFD)
		if !ok {
			return fatal(env, fmt.Sprintf("--status-fd=%d is not an open file descriptor", a.statusFD))
		}
		status = w
	}
	st := &statusLines{w: status}
	errsig := func(pk, msg string) int {
		if pk == "" {
			pk = errsigUnknown
		}
		st.line("NEWSIG")
		st.line("ERRSIG " + pk + " 0 0 00 0 9")
		return fatal(env, msg)
	}
	path := a.sigFile
	if !filepath.IsAbs(path) && env.Dir != "" {
		path = filepath.Join(env.Dir, path)
	}
	data, err := readSigFile(path)
	if err != nil {
		return errsig("", err.Error())
	}
	e, err := nipgs.ParseArmor(data)
	if err != nil {
		var ee *nipgs.MalformedError
		pk := ""
		if errors.As(err, &ee) {
			pk = ee.PK
		}
		return errsig(pk, err.Error())
	}
	pkHex := e.PK.Hex()
	h := nipgs.NewHash(e.T, e.OA)
	n, err := io.Copy(h, io.LimitReader(env.In(), maxPayloadBytes+1))
	if err != nil {
		return errsig(pkHex, "read payload from stdin: "+err.Error())
	}
	if n > maxPayloadBytes {
		return errsig(pkHex, fmt.Sprintf("payload is larger than the %d-byte limit", maxPayloadBytes))
	}
	if !e.PK.Verify(h.Sum(nil), e.Sig[:]) {
		st.line("NEWSIG")
		st.line("BADSIG " + pkHex + " " + pkHex)
		fmt.Fprintf(env.Err(), "git-sign-nostr: BAD signature from %s (%s)\n", e.PK.Npub(), pkHex)
		if st.err != nil {
			return fatal(env, "write status: "+st.err.Error())
		}
		return exitFail
	}
	oaStatus := e.OAStatus()
	if oaStatus == nipgs.OAInvalid {
		fmt.Fprintf(env.Err(), "warning: owner attestation by %s does not verify\n", e.OA.Owner)
	}
	// Spec §5.5 step 10: trust is advisory, from user.signingkey only.
	trust := "TRUST_UNDEFINED 0 shell"
	if v, ok, err := newGitConfig(ctx, env).get(configSigningKey); err == nil && ok {
		if want, ok := normaliseKeyID(strings.TrimSpace(v)); ok && want == pkHex {
			trust = "TRUST_FULLY 0 shell"
		}
	}
	date := time.Unix(int64(e.T), 0).UTC().Format(time.DateOnly)
	st.line("NEWSIG")
	st.line("GOODSIG " + pkHex + " " + pkHex)
	st.line(fmt.Sprintf("VALIDSIG %s %s %d 0 - - - - - %s", pkHex, date, e.T, pkHex))
	st.line(trust)
	st.line("NOTATION_NAME nostr-trust-model")
	st.line("NOTATION_DATA advisory-config-match-only")
	st.line("NOTATION_NAME nostr-oa-status")
	st.line("NOTATION_DATA " + oaStatus)
	if e.OA != nil {
		st.line("NOTATION_NAME nostr-oa-owner")
		st.line("NOTATION_DATA " + e.OA.Owner)
	}
	if st.err != nil {
		return fatal(env, "write status: "+st.err.Error())
	}
	fmt.Fprintf(env.Err(), "git-sign-nostr: Good signature from %s (%s)\n", e.PK.Npub(), pkHex)
	return exitOK
}

// statusLines writes `[GNUPG:] ` lines and keeps the first write error.
type statusLines struct {
	w   io.Writer
	err error
}

func (s *statusLines) line(text string) {
	if s.err != nil {
		return
	}
	_, s.err = io.WriteString(s.w, "[GNUPG:] "+text+"\n")
}

// readSigFile reads the temp file git wrote: a regular file of at most
// maxSigFileBytes.
func readSigFile(path string) ([]byte, error) {
	// Stat first so that a FIFO is refused before open could block on it.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("signature file %s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open signature file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat signature file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("signature file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSigFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read signature file: %w", err)
	}
	if len(data) > maxSigFileBytes {
		return nil, fmt.Errorf("signature file %s is larger than %d bytes", path, maxSigFileBytes)
	}
	return data, nil
}
