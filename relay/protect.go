package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"buzzbox/internal/workspace"
)

// Branch protection: no push through the git route updates or deletes a
// protected branch of a repository; changes reach it by a merged pull
// request, which the relay's own git performs (merge.go). The protected
// branches are those the owner's announcement lists in buzz-protect, or
// main when it says nothing. Creating a protected branch that does not
// exist yet (the first push of a new repository) is allowed.
//
// The relay reads the commands at the head of a receive-pack request
// (pkt-lines up to the first flush) before git sees them; when one names a
// protected branch it answers as receive-pack would, with report-status
// "ng <ref> <reason>" and the rule on the progress band, so git prints
// "remote: …" and "! [remote rejected]". Signed pushes (push-cert) carry
// their commands elsewhere and are refused whole.

// zeroID is the object id git uses for "no object".
const zeroID = "0000000000000000000000000000000000000000"

// pushCmd is one ref update of a push.
type pushCmd struct{ old, new, ref string }

// errPushCert marks a signed push, whose commands the relay does not read.
var errPushCert = errors.New("signed pushes (push-cert) are not accepted")

// readPktLine reads one pkt-line; flush is true for "0000".
func readPktLine(r io.Reader) (line []byte, flush bool, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, false, err
	}
	n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
	if err != nil {
		return nil, false, fmt.Errorf("bad pkt-line length %q", hdr[:])
	}
	if n == 0 {
		return nil, true, nil
	}
	if n < 4 || n > maxPktLine {
		return nil, false, fmt.Errorf("pkt-line length %d out of range", n)
	}
	line = make([]byte, n-4)
	_, err = io.ReadFull(r, line)
	return line, false, err
}

// readPushCommands reads the command list at the start of a receive-pack
// request body and the client's capabilities.
func readPushCommands(r io.Reader) (cmds []pushCmd, caps []string, err error) {
	for {
		line, flush, err := readPktLine(r)
		if err != nil {
			return nil, nil, fmt.Errorf("read push commands: %w", err)
		}
		if flush {
			return cmds, caps, nil
		}
		s := strings.TrimSuffix(string(line), "\n")
		if c, rest, ok := strings.Cut(s, "\x00"); ok {
			s, caps = c, strings.Fields(rest)
		}
		switch {
		case strings.HasPrefix(s, "push-cert"):
			return nil, nil, errPushCert
		case strings.HasPrefix(s, "shallow "):
			continue
		}
		f := strings.Fields(s)
		if len(f) != 3 {
			return nil, nil, fmt.Errorf("read push commands: malformed command %q", s)
		}
		if len(cmds) == maxPushCommands {
			return nil, nil, fmt.Errorf("read push commands: more than %d ref updates in one push", maxPushCommands)
		}
		cmds = append(cmds, pushCmd{old: f[0], new: f[1], ref: f[2]})
	}
}

// protectedBranches returns the branches of rt no push may change.
func (r *Relay) protectedBranches(ctx context.Context, rt gitRoute) []string {
	if own := r.ownerAnnouncement(ctx, rt); own != nil {
		for _, tag := range own.Tags {
			if len(tag) >= 1 && tag[0] == workspace.TagRepoProtect {
				return tag[1:]
			}
		}
	}
	return []string{workspace.DefaultProtectedBranch}
}

// isProtected reports whether branch (a short name) is protected in rt.
func (r *Relay) isProtected(ctx context.Context, rt gitRoute, branch string) bool {
	for _, b := range r.protectedBranches(ctx, rt) {
		if b == branch {
			return true
		}
	}
	return false
}

// refExists reports whether rt has ref.
func (r *Relay) refExists(ctx context.Context, rt gitRoute, ref string) bool {
	_, err := r.gitIn(ctx, rt, nil, "rev-parse", "--verify", "--quiet", ref)
	return err == nil
}

// guardPush reads the commands of a receive-pack request and refuses the
// push when one changes a protected branch, answering as receive-pack
// would. It reports whether the request may go on to git, with its body
// restored.
func (r *Relay) guardPush(w http.ResponseWriter, req *http.Request, rt gitRoute) bool {
	if enc := req.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		http.Error(w, "push bodies with Content-Encoding "+enc+" are not accepted", http.StatusUnsupportedMediaType)
		return false
	}
	var head bytes.Buffer
	cmds, caps, err := readPushCommands(io.TeeReader(io.LimitReader(req.Body, maxPushHead), &head))
	if errors.Is(err, errPushCert) {
		http.Error(w, err.Error(), http.StatusForbidden)
		return false
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	var refused []string
	for _, c := range cmds {
		b, ok := strings.CutPrefix(c.ref, "refs/heads/")
		if ok && r.isProtected(req.Context(), rt, b) && r.refExists(req.Context(), rt, c.ref) {
			refused = append(refused, c.ref)
		}
	}
	if len(refused) == 0 {
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(&head, req.Body), req.Body}
		return true
	}
	io.Copy(io.Discard, req.Body) // git reads the answer only after sending the pack
	rule := fmt.Sprintf("branch protection: %s is protected in %s; push another branch and open a pull request (buzz pr create --repo %s --head BRANCH)",
		strings.Join(refused, ", "), repoD(rt), repoD(rt))
	var report bytes.Buffer
	report.Write(pktLine("unpack ok\n"))
	for _, c := range cmds {
		why := "protected branch"
		if !slices.Contains(refused, c.ref) {
			why = "push refused: it changes a protected branch too"
		}
		report.Write(pktLine("ng " + c.ref + " " + why + "\n"))
	}
	report.WriteString("0000")
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	if slices.Contains(caps, "side-band-64k") || slices.Contains(caps, "side-band") {
		w.Write(pktLine("\x02" + rule + "\n"))
		w.Write(pktLine("\x01" + report.String()))
		io.WriteString(w, "0000")
	} else {
		w.Write(report.Bytes())
	}
	r.log.Info("push to a protected branch refused", "repo", repoD(rt), "refs", refused)
	return false
}

// pktLine frames s as one pkt-line.
func pktLine(s string) []byte { return []byte(fmt.Sprintf("%04x%s", len(s)+4, s)) }
