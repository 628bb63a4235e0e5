package cli

import (
	"net/url"
	"path"
	"strings"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/internal/nostrkey"
	"buzzbox/internal/workspace"
)

// truncateDiff cuts a diff to at most max bytes at the start of a hunk
// (a line "@@ " or "diff --git"), so no hunk is left half-shown. A diff
// whose first hunk is already too long is cut at the last line break.
func truncateDiff(d string, max int) (string, bool) {
	if len(d) <= max {
		return d, false
	}
	head := d[:max+1]
	cut := -1
	for _, marker := range []string{"\n@@ ", "\ndiff --git "} {
		if i := strings.LastIndex(head, marker); i > cut {
			cut = i
		}
	}
	if cut <= 0 {
		cut = strings.LastIndexByte(d[:max], '\n')
	}
	if cut <= 0 {
		cut = max
	}
	return d[:cut+1], true
}

// langOf guesses a language from a file extension.
func langOf(file string) string {
	switch strings.ToLower(path.Ext(file)) {
	case ".go":
		return "go"
	case ".rs":
		return "rust"
	case ".py":
		return "python"
	case ".js", ".mjs", ".cjs":
		return "javascript"
	case ".ts", ".tsx":
		return "typescript"
	case ".java":
		return "java"
	case ".c", ".h":
		return "c"
	case ".cc", ".cpp", ".hpp":
		return "cpp"
	case ".rb":
		return "ruby"
	case ".sh":
		return "shell"
	case ".md":
		return "markdown"
	case ".json":
		return "json"
	case ".yaml", ".yml":
		return "yaml"
	case ".toml":
		return "toml"
	}
	return ""
}

func runSendDiff(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	diff, err := readText(in, "diff", maxDiffInputBytes)
	if err != nil {
		return err
	}
	if strings.TrimSpace(diff) == "" {
		return userErr("refusing to send an empty diff")
	}
	repo, err := need(in, "repo")
	if err != nil {
		return err
	}
	if u, err := url.Parse(repo); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return userErr("--repo must be an http(s) URL, got %q", repo)
	}
	commit := strings.ToLower(in.p.str("commit"))
	if len(commit) < 7 || len(commit) > 64 || !nostrkey.IsLowerHex(commit, len(commit)) {
		return userErr("--commit must be at least 7 hex characters, got %q", in.p.str("commit"))
	}
	src, tgt := in.p.str("source-branch"), in.p.str("target-branch")
	if (src == "") != (tgt == "") {
		return userErr("--source-branch and --target-branch go together")
	}
	diff, truncated := truncateDiff(diff, maxDiffBytes)
	tags := nostr.Tags{{"h", ch}, {"repo", repo}, {"commit", commit}}
	file := in.p.str("file")
	if file != "" {
		tags = append(tags, nostr.Tag{"file", file})
	}
	if v := in.p.str("parent-commit"); v != "" {
		tags = append(tags, nostr.Tag{"parent-commit", v})
	}
	if src != "" {
		tags = append(tags, nostr.Tag{"branch", src, tgt})
	}
	if v := in.p.str("pr"); v != "" {
		tags = append(tags, nostr.Tag{"pr", v})
	}
	lang := in.p.str("lang")
	if lang == "" {
		lang = langOf(file)
	}
	if lang != "" {
		tags = append(tags, nostr.Tag{"l", lang})
	}
	desc := in.p.str("description")
	if desc != "" {
		tags = append(tags, nostr.Tag{workspace.TagDescription, desc})
	}
	alt := "Code diff of " + commit[:7]
	if file != "" {
		alt += " in " + file
	}
	tags = append(tags, nostr.Tag{"alt", alt})
	if in.p.has("reply-to") {
		id, err := parseHexID(in.p.str("reply-to"))
		if err != nil {
			return err
		}
		parent, err := fetchTarget(in, id)
		if err != nil {
			return err
		}
		tags = append(tags, threadTags(parent)...)
	}
	if truncated {
		tags = append(tags, nostr.Tag{"truncated", "true"})
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindDiff, Content: diff, Tags: tags})
}
