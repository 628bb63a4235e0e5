package relay

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/workspace"
)

// NIP-34 state the relay keeps for each repository it hosts: a kind 30617
// announcement (name, description, clone URLs, relays, the earliest unique
// commit, the owner as maintainer, and the channel it is shared with as h
// and buzz-channel) and a kind 30618 state (every branch and tag, HEAD),
// both signed by the relay's key and replaced after each push. Their d
// tag is "<owner hex>/<name>", since one relay key announces every owner's
// repositories; the address "30617:<relay>:<owner>/<name>" is what pull
// requests name in their a tag.
//
// Who reads them: what may read the repository (gitAllowed, read), so
// the state of a repository no one shared stays its owner's, and that of
// one shared with a private channel stays the channel's. The same holds
// for pull requests, their updates and statuses naming the address.
//
// What it does not do: announce repositories no push has touched since
// this relay started (a push or a change of the owner's announcement
// brings them in), or keep refs/nostr/* refs.

// repoD is the d tag of the relay's announcement and state of rt.
func repoD(rt gitRoute) string { return rt.owner + "/" + rt.repo }

// repoAddress is the NIP-01 address of the relay's announcement of rt.
func (r *Relay) repoAddress(rt gitRoute) string {
	return fmt.Sprintf("%d:%s:%s", workspace.KindRepoAnnouncement, r.pubkey, repoD(rt))
}

// parseRepoD reads "<owner hex>/<name>".
func parseRepoD(d string) (gitRoute, bool) {
	owner, name, ok := strings.Cut(d, "/")
	if !ok || !nostr.IsValid32ByteHex(owner) || !validRepoName(name) {
		return gitRoute{}, false
	}
	return gitRoute{owner: owner, repo: name}, true
}

// repoOfEvent returns the hosted repository ev is about: the d tag of the
// relay's own 30617/30618, or the a tag of a pull request, update or
// status naming the relay's announcement.
func (r *Relay) repoOfEvent(ev *nostr.Event) (gitRoute, bool) {
	switch ev.Kind {
	case workspace.KindRepoAnnouncement, workspace.KindRepoState:
		if ev.PubKey != r.pubkey {
			return gitRoute{}, false
		}
		return parseRepoD(ev.Tags.GetD())
	case workspace.KindPullRequest, workspace.KindPullRequestUpdate,
		workspace.KindStatusOpen, workspace.KindStatusMerged, workspace.KindStatusClosed, workspace.KindStatusDraft:
		prefix := fmt.Sprintf("%d:%s:", workspace.KindRepoAnnouncement, r.pubkey)
		for _, a := range tagValues(ev, "a") {
			if d, ok := strings.CutPrefix(a, prefix); ok {
				return parseRepoD(d)
			}
		}
	}
	return gitRoute{}, false
}

// repoKind reports whether events of kind k may be about a hosted
// repository (and so are read-checked against it).
func repoKind(k int) bool {
	switch k {
	case workspace.KindRepoAnnouncement, workspace.KindRepoState, workspace.KindPullRequest, workspace.KindPullRequestUpdate,
		workspace.KindStatusOpen, workspace.KindStatusMerged, workspace.KindStatusClosed, workspace.KindStatusDraft:
		return true
	}
	return false
}

// mayMatchRepoKind reports whether f can match a repoKind or a comment
// (which may be on a pull request).
func mayMatchRepoKind(f nostr.Filter) bool {
	if len(f.Kinds) == 0 {
		return true
	}
	for _, k := range f.Kinds {
		if repoKind(k) || k == workspace.KindComment {
			return true
		}
	}
	return false
}

// commentedPR returns the pull request whose thread comment ev belongs to
// (its root scope: E, with K 1618), if the store has it.
func (r *Relay) commentedPR(ev *nostr.Event) *nostr.Event {
	if ev.Kind != workspace.KindComment {
		return nil
	}
	if k, _ := tagValue(ev, "K"); k != strconv.Itoa(workspace.KindPullRequest) {
		return nil
	}
	root, _ := tagValue(ev, "E")
	if !nostr.IsValid32ByteHex(root) {
		return nil
	}
	return r.firstStored(internal(context.Background()), nostr.Filter{IDs: []string{root}, Kinds: []int{workspace.KindPullRequest}, Limit: 1})
}

// repoReadable reports whether c may see ev as far as hosted
// repositories go: events about none pass, and a comment on a pull
// request goes as the pull request does.
func (r *Relay) repoReadable(c caller, ev *nostr.Event) bool {
	if pr := r.commentedPR(ev); pr != nil {
		return r.channelReadable(c, pr) && r.repoReadable(c, pr)
	}
	if !repoKind(ev.Kind) {
		return true
	}
	rt, ok := r.repoOfEvent(ev)
	if !ok {
		return true
	}
	if c.pubkey == "" {
		return false
	}
	return r.gitAllowed(internal(context.Background()), c, rt, false)
}

// repoDir is where rt's bare repository lives.
func (r *Relay) repoDir(rt gitRoute) string {
	return filepath.Join(r.gitRoot(), rt.owner, rt.repo+".git")
}

// gitIn runs git on rt's repository and returns its stdout.
func (r *Relay) gitIn(ctx context.Context, rt gitRoute, stdin io.Reader, args ...string) (string, error) {
	return r.gitInWith(ctx, rt, stdin, nil, args...)
}

// gitInWith is gitIn with extra environment variables.
func (r *Relay) gitInWith(ctx context.Context, rt gitRoute, stdin io.Reader, extra []string, args ...string) (string, error) {
	var out strings.Builder
	if err := r.runGit(ctx, rt, stdin, &out, extra, args...); err != nil {
		return out.String(), err
	}
	return out.String(), nil
}

// gitCapped runs git on rt's repository and returns at most limit bytes
// of its stdout; cut reports that there was more, in which case git was
// stopped (its pipe closed) rather than read to the end.
func (r *Relay) gitCapped(ctx context.Context, rt gitRoute, stdin io.Reader, limit int, args ...string) (out []byte, cut bool, err error) {
	w := &cappedWriter{limit: limit}
	err = r.runGit(ctx, rt, stdin, w, nil, args...)
	if w.cut {
		return w.buf, true, nil // git died of the closed pipe, as asked
	}
	return w.buf, false, err
}

// runGit runs git with --git-dir set to rt's repository, stdout to out.
func (r *Relay) runGit(ctx context.Context, rt gitRoute, stdin io.Reader, out io.Writer, extra []string, args ...string) error {
	git, err := r.gitPath()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, git, append([]string{"--git-dir", r.repoDir(rt)}, args...)...)
	cmd.Env = append(r.gitEnv(), extra...)
	cmd.Stdin = stdin
	cmd.Stdout = out
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// errCapped stops a copy into a cappedWriter that is full.
var errCapped = errors.New("output over its cap")

// cappedWriter keeps the first limit bytes written and fails the write
// that goes past them, which makes os/exec close git's stdout pipe.
type cappedWriter struct {
	limit int
	buf   []byte
	cut   bool
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	room := w.limit - len(w.buf)
	if len(p) > room {
		w.buf = append(w.buf, p[:max(room, 0)]...)
		w.cut = true
		return max(room, 0), errCapped
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// repoRefs returns rt's branches and tags (full ref name → object id) and
// HEAD's target ref.
func (r *Relay) repoRefs(ctx context.Context, rt gitRoute) (map[string]string, string, error) {
	out, err := r.gitIn(ctx, rt, nil, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, "", err
	}
	refs := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, maxRefLine)
	for sc.Scan() {
		if name, id, ok := strings.Cut(sc.Text(), " "); ok {
			refs[name] = id
		}
		if len(refs) >= maxStateRefs {
			break
		}
	}
	head, _ := r.gitIn(ctx, rt, nil, "symbolic-ref", "HEAD")
	return refs, strings.TrimSpace(head), nil
}

// ownerAnnouncement returns the owner's own 30617 for rt, or nil.
func (r *Relay) ownerAnnouncement(ctx context.Context, rt gitRoute) *nostr.Event {
	return r.firstStored(internal(ctx), nostr.Filter{
		Kinds: []int{workspace.KindRepoAnnouncement}, Authors: []string{rt.owner},
		Tags: nostr.TagMap{"d": []string{rt.repo}}, Limit: 1,
	})
}

// publishRepo signs and stores the relay's 30617 and 30618 for rt from
// the repository as it is now.
func (r *Relay) publishRepo(ctx context.Context, rt gitRoute, httpScheme string) {
	ann, state, ok := r.repoEvents(ctx, rt, httpScheme)
	if !ok {
		return
	}
	r.publishRelayEvent(ctx, workspace.KindRepoAnnouncement, ann)
	r.publishRelayEvent(ctx, workspace.KindRepoState, state)
}

// repoEvents returns the tags of the relay's 30617 and 30618 for rt as
// the repository is now; ok is false when there is no repository.
func (r *Relay) repoEvents(ctx context.Context, rt gitRoute, httpScheme string) (ann, state nostr.Tags, ok bool) {
	if _, err := os.Stat(r.repoDir(rt)); err != nil {
		return nil, nil, false
	}
	refs, head, err := r.repoRefs(ctx, rt)
	if err != nil {
		r.log.Error("read repository refs", "repo", repoD(rt), "err", err)
		return nil, nil, false
	}
	d := nostr.Tag{"d", repoD(rt)}
	ann = nostr.Tags{d, {workspace.TagRepoName, rt.repo}}
	own := r.ownerAnnouncement(ctx, rt)
	if own != nil {
		if v, ok := tagValue(own, workspace.TagDescription); ok {
			ann = append(ann, nostr.Tag{workspace.TagDescription, v})
		}
	}
	clone := nostr.Tag{workspace.TagRepoClone}
	for _, b := range r.names().bases(httpScheme) {
		clone = append(clone, b+"/git/"+rt.owner+"/"+rt.repo+".git")
	}
	relays := nostr.Tag{workspace.TagRepoRelays}
	wsScheme := "ws"
	if httpScheme == "https" {
		wsScheme = "wss"
	}
	relays = append(relays, r.names().bases(wsScheme)...)
	ann = append(ann, clone, relays, nostr.Tag{workspace.TagRepoMaintainers, rt.owner})
	if len(refs) > 0 {
		if root, err := r.gitIn(ctx, rt, nil, "rev-list", "--max-parents=0", "--all"); err == nil {
			if roots := strings.Fields(root); len(roots) > 0 {
				ann = append(ann, nostr.Tag{"r", roots[len(roots)-1], workspace.TagRepoEUC})
			}
		}
	}
	state = nostr.Tags{d}
	if ch := r.repoChannel(ctx, rt); ch != "" {
		ann = append(ann, nostr.Tag{"h", ch}, nostr.Tag{workspace.TagRepoChannel, ch})
		state = append(state, nostr.Tag{"h", ch})
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		state = append(state, nostr.Tag{n, refs[n]})
	}
	if head != "" {
		state = append(state, nostr.Tag{"HEAD", "ref: " + head})
	}
	return ann, state, true
}

// ownHTTPScheme is the scheme of the relay's own names when no request
// says which: https behind a wss:// --public-url, else http.
func (r *Relay) ownHTTPScheme() string {
	if r.names().secure {
		return "https"
	}
	return "http"
}

// maxAnnouncedRepos bounds the repositories announceRepos looks at: a
// start must not stall on a git dir of millions of entries; those past
// it are announced at their next push.
const maxAnnouncedRepos = 10000

// announceRepos brings the relay's 30617 and 30618 of every repository
// in the git dir up to date at start: repositories pushed while no
// announcement was kept (an older relay), changed on disk, or pushed
// through another instance sharing the --git-dir and a store the
// announcement did not reach. A repository whose stored events already
// say what it holds is left alone, so a restart publishes nothing new.
func (r *Relay) announceRepos(ctx context.Context) {
	if r.gitOff() != "" {
		return
	}
	owners, err := os.ReadDir(r.gitRoot())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("announce repositories: read the git dir", "dir", r.gitRoot(), "err", err)
		}
		return
	}
	scheme := r.ownHTTPScheme()
	seen, published := 0, 0
	for _, o := range owners {
		if !o.IsDir() || !nostr.IsValid32ByteHex(o.Name()) {
			continue
		}
		repos, err := os.ReadDir(filepath.Join(r.gitRoot(), o.Name()))
		if err != nil {
			continue
		}
		for _, e := range repos {
			name, ok := strings.CutSuffix(e.Name(), ".git")
			if !e.IsDir() || !ok || !validRepoName(name) {
				continue
			}
			if seen++; seen > maxAnnouncedRepos {
				r.log.Warn("announce repositories: too many to look at on start; the rest are announced at their next push", "limit", maxAnnouncedRepos)
				return
			}
			if ctx.Err() != nil {
				return
			}
			rt := gitRoute{owner: o.Name(), repo: name}
			ann, state, ok := r.repoEvents(ctx, rt, scheme)
			if !ok {
				continue
			}
			for _, ev := range []struct {
				kind int
				tags nostr.Tags
			}{{workspace.KindRepoAnnouncement, ann}, {workspace.KindRepoState, state}} {
				if r.storedRelayTags(ctx, ev.kind, repoD(rt), ev.tags) {
					continue
				}
				r.publishRelayEvent(ctx, ev.kind, ev.tags)
				published++
			}
		}
	}
	if published > 0 {
		r.log.Info("repositories announced on start", "events", published)
	}
}

// storedRelayTags reports whether the relay's stored event of kind for d
// has exactly tags.
func (r *Relay) storedRelayTags(ctx context.Context, kind int, d string, tags nostr.Tags) bool {
	ev := r.firstStored(internal(ctx), nostr.Filter{Kinds: []int{kind}, Authors: []string{r.pubkey}, Tags: nostr.TagMap{"d": {d}}, Limit: 1})
	return ev != nil && slices.EqualFunc(ev.Tags, tags, func(a, b nostr.Tag) bool { return slices.Equal(a, b) })
}

// onRepoEvent keeps the relay's announcement current when the owner's
// own announcement (sharing, description, protection) changes.
func (r *Relay) onRepoEvent(ctx context.Context, ev *nostr.Event) {
	if ev.Kind != workspace.KindRepoAnnouncement || ev.PubKey == r.pubkey || r.gitOff() != "" {
		return
	}
	rt := gitRoute{owner: ev.PubKey, repo: ev.Tags.GetD()}
	if !validRepoName(rt.repo) {
		return
	}
	scheme := r.ownHTTPScheme()
	r.publishRepo(ctx, rt, scheme)
}

// afterPush brings the relay's NIP-34 state of rt up to date after a
// push, and the pull requests whose head branch moved.
func (r *Relay) afterPush(ctx context.Context, rt gitRoute, httpScheme string) {
	r.publishRepo(ctx, rt, httpScheme)
	r.updatePullRequests(ctx, rt)
}
