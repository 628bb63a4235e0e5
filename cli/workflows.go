package cli

import (
	"buzzbox/internal/workspace"
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/nbd-wtf/go-nostr"
)

// Workflows, as upstream's CLI writes them: a definition is an addressable
// kind 30620 event (d = workflow UUID, h = channel); a manual run is a
// kind 46020 naming the workflow in d (`buzz workflows run`, or upstream's
// `trigger`), and a re-run one that also names the earlier run in a run
// tag; an approval step is answered with
// kind 46030 (grant) or 46031 (deny) whose d is the SHA-256 of the token.
// Running workflows is the relay's business: buzz-relay checks each
// definition on publish and records every run as a kind 30622 event.

// workflowInfo is a workflow definition as list and get print it.
type workflowInfo struct {
	WorkflowID string `json:"workflow_id"`
	Content    string `json:"content"`
	CreatedAt  int64  `json:"created_at"`
	Pubkey     string `json:"pubkey"`
}

func toWorkflow(ev *nostr.Event) workflowInfo {
	return workflowInfo{WorkflowID: tagValue(ev, "d"), Content: ev.Content, CreatedAt: int64(ev.CreatedAt), Pubkey: ev.PubKey}
}

func needWorkflow(in *inv) (string, error) {
	v, err := need(in, "workflow")
	if err != nil {
		return "", err
	}
	return parseUUID(v)
}

func runWorkflowsList(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindWorkflowDef}, Tags: nostr.TagMap{"h": []string{ch}}})
	if err != nil {
		return err
	}
	sortDescending(evs)
	out := make([]workflowInfo, 0, len(evs))
	for _, ev := range evs {
		out = append(out, toWorkflow(ev))
	}
	return writeJSON(in.out, out)
}

func runWorkflowsGet(in *inv) error {
	id, err := needWorkflow(in)
	if err != nil {
		return err
	}
	evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindWorkflowDef}, Tags: nostr.TagMap{"d": []string{id}}})
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return writeJSON(in.out, nil)
	}
	sortDescending(evs)
	return writeJSON(in.out, toWorkflow(evs[0]))
}

func runWorkflowsTrigger(in *inv) error {
	id, err := needWorkflow(in)
	if err != nil {
		return err
	}
	content := ""
	if in.p.has("inputs") {
		if content, err = compactObject("inputs", in.p.str("inputs")); err != nil {
			return err
		}
	}
	tags := nostr.Tags{{"d", id}, {workspace.TagWorkflowPress, workspace.NewUUID()}}
	if in.p.has("rerun") {
		if in.p.has("inputs") {
			return userErr("--rerun repeats a run with its trigger's values; drop --inputs, or run without --rerun")
		}
		run, err := parseUUID(in.p.str("rerun"))
		if err != nil {
			return userErr("--rerun: %s", err.Error())
		}
		tags = append(tags, nostr.Tag{workspace.TagWorkflowRun, run})
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindWorkflowTrigger, Content: content, Tags: tags})
}

// compactObject checks that a flag's value is one JSON object and
// re-encodes it without whitespace: keys sorted, numbers as written.
func compactObject(name, raw string) (string, error) {
	if len(raw) > maxContentBytes {
		return "", userErr("--%s is %d bytes, over the %d-byte limit", name, len(raw), maxContentBytes)
	}
	if !json.Valid([]byte(raw)) {
		var v any
		err := json.Unmarshal([]byte(raw), &v)
		return "", userErr("--%s is not valid JSON: %v", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var v any
	dec.Decode(&v) // cannot fail: raw is one valid JSON value
	obj, ok := v.(map[string]any)
	if !ok {
		return "", userErr("--%s must be a JSON object", name)
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, obj); err != nil {
		return "", otherErr("encode --%s: %v", name, err)
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func runWorkflowsApprove(in *inv) error {
	token, err := need(in, "token")
	if err != nil {
		return err
	}
	if _, err := parseUUID(token); err != nil {
		return userErr("--token: %s", err.Error())
	}
	kind := workspace.KindApprovalGrant
	switch v := in.p.str("approved"); {
	case !in.p.has("approved") || v == "true":
	case v == "false":
		kind = workspace.KindApprovalDeny
	default:
		return userErr("--approved must be true or false, got %q", v)
	}
	note := in.p.str("note")
	if len(note) > maxContentBytes {
		return userErr("--note is %d bytes, over the %d-byte limit", len(note), maxContentBytes)
	}
	// Upstream's relay compares d with the hash of the token it issued, so
	// the token is hashed exactly as given, case included.
	return publishAndPrint(in, &nostr.Event{Kind: kind, Content: note, Tags: nostr.Tags{{"d", sha256Hex(token)}}})
}

// maxDefinitionFile bounds a definition read from --file: the relay
// refuses definitions over 64 KiB (relay/workflow.MaxDefinitionBytes).
const maxDefinitionFile = 64 << 10

// runWorkflowsCreate publishes a definition (kind 30620). The relay
// checks it; an invalid one is refused with its line, column and mistake,
// which the user error carries.
func runWorkflowsCreate(in *inv) error {
	ch, err := needChannel(in)
	if err != nil {
		return err
	}
	path, err := need(in, "file")
	if err != nil {
		return err
	}
	text, err := readFileCapped(path, maxDefinitionFile)
	if err != nil {
		return err
	}
	id := ""
	if in.p.has("workflow") {
		if id, err = parseUUID(in.p.str("workflow")); err != nil {
			return userErr("--workflow: %s", err.Error())
		}
	} else {
		id = workspace.NewUUID()
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindWorkflowDef, Content: string(text), Tags: nostr.Tags{{"d", id}, {"h", ch}}})
}

// runWorkflowsCancel asks the relay to cancel a run (kind 46021).
func runWorkflowsCancel(in *inv) error {
	run, err := need(in, "run")
	if err != nil {
		return err
	}
	if run, err = parseUUID(run); err != nil {
		return userErr("--run: %s", err.Error())
	}
	return publishAndPrint(in, &nostr.Event{Kind: workspace.KindWorkflowCancel, Tags: nostr.Tags{{"d", run}}})
}

// runWorkflowsRuns prints a workflow's runs as the relay records them
// (kind 30622, relay-signed, content = the run's state and trace), newest
// first.
func runWorkflowsRuns(in *inv) error {
	id, err := needWorkflow(in)
	if err != nil {
		return err
	}
	limit, err := in.p.nonNegative("limit", 20)
	if err != nil {
		return err
	}
	defs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindWorkflowDef}, Tags: nostr.TagMap{"d": []string{id}}})
	if err != nil {
		return err
	}
	// The store's index of a tags does not answer #a queries for these
	// addresses, so runs are read by channel and matched here.
	addrs, chans := map[string]bool{}, map[string]bool{}
	for _, d := range defs {
		addrs[fmt.Sprintf("%d:%s:%s", workspace.KindWorkflowDef, d.PubKey, id)] = true
		if h := tagValue(d, "h"); h != "" {
			chans[h] = true
		}
	}
	out := []json.RawMessage{}
	for ch := range chans {
		evs, err := in.c.Query(in.ctx, nostr.Filter{Kinds: []int{workspace.KindWorkflowRun}, Tags: nostr.TagMap{"h": []string{ch}}})
		if err != nil {
			return err
		}
		sortDescending(evs)
		for _, ev := range evs {
			if addrs[tagValue(ev, "a")] && json.Valid([]byte(ev.Content)) && int64(len(out)) < limit {
				out = append(out, json.RawMessage(ev.Content))
			}
		}
	}
	return writeJSON(in.out, out)
}
