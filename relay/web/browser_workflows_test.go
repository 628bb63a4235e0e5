package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/testexe"

	"github.com/chromedp/chromedp"
	"github.com/nbd-wtf/go-nostr"
	"github.com/nbd-wtf/go-nostr/nip19"
)

// wfDeploy is the definition the browser publishes: a deploy that waits
// for the owner's approval, then posts.
const wfDeploy = `name: deploy
trigger: {on: manual}
steps:
  - id: gate
    action: request_approval
    from: owner
    message: "Deploy now?"
    timeout: 10m
  - id: post
    action: send_message
    text: "deploying after {{steps.gate.status}}"
`

// wfTypo has an unknown action on line 5, column 13.
const wfTypo = "name: typo\ntrigger: {on: manual}\nsteps:\n  - id: a\n    action: send_mesage\n"

// TestBrowserWorkflows runs the built buzz-relay and, in a real browser
// as the channel's owner: publishes a definition with a mistake (the
// form names line 5, column 13 and selects that line), publishes a
// deploy behind an approval, runs it with its Run button, watches the
// trace wait at the gate, approves from the browser (the run goes on, the
// message is posted, the trace says who approved), runs it again and
// denies (the run stops, nothing posted), re-runs the denied run and
// cancels that; a run whose gate names another person shows no buttons,
// and that person's grant, signed elsewhere, moves the trace on. The
// panel is shot at 1440×900 and 390×844 and checked by
// axe-core at both sizes.
func TestBrowserWorkflows(t *testing.T) {
	modules, _ := testexe.NodeModules(t)
	axe, err := os.ReadFile(filepath.Join(modules, "axe-core", "axe.min.js"))
	if err != nil {
		t.Skipf("SKIP(loud): axe-core missing (%v); run scripts/test.sh (npm install in scripts/node)", err)
	}
	ctx, consoleErrors := browser(t)
	sk := nostr.GeneratePrivateKey()
	pk, _ := nostr.GetPublicKey(sk)
	npub, _ := nip19.EncodePublicKey(pk)
	nsec, _ := nip19.EncodePrivateKey(sk)
	otherSK := nostr.GeneratePrivateKey()
	otherPK, _ := nostr.GetPublicKey(otherSK)
	base := startBinary(t, "--owner", npub, "--allow", otherPK)
	rctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	owner := authedURL(t, rctx, "ws"+strings.TrimPrefix(base, "http"), sk)
	ch := "7a1c2d4e-3333-4000-8000-0000000000ef"
	create := nostr.Event{Kind: 9007, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"h", ch}, {"name", "ops"}}}
	create.Sign(sk)
	if err := owner.Publish(rctx, create); err != nil {
		t.Fatalf("create the channel: %v", err)
	}
	messages := func() []string {
		evs, err := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{9}, Tags: nostr.TagMap{"h": {ch}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ev := range evs {
			out = append(out, ev.Content)
		}
		return out
	}

	openSignIn(t, ctx, base)
	do(t, ctx, "import the owner's nsec", chromedp.SetValue(labelled("Or sign in with your secret key (nsec1… or the 64 hex characters of owner.key)"), nsec), chromedp.Click(button("Sign in with this key")))
	waitJS(t, ctx, "signed in", `document.getElementById('status').dataset.state === 'authenticated'`)
	do(t, ctx, "open #ops", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`location.hash = '#/c/%s'`, ch)))
	waitJS(t, ctx, "the channel view", textIn("#channel-name", "ops"))
	do(t, ctx, "open the workflows", chromedp.Click(button("Workflows")))
	waitJS(t, ctx, "the workflows dialog", `!!document.querySelector('dialog.wf-page[open]') && `+textIn(".wf-list", "No workflows"))

	// A definition with a mistake is refused; the form names and selects its line.
	definition := labelled("Definition (YAML: name, trigger, steps)")
	do(t, ctx, "publish a typo", chromedp.SetValue(definition, wfTypo), chromedp.Click(button("Publish workflow")))
	waitJS(t, ctx, "the error with its line", textIn("#wf-error", "Line 5, column 13:")+` && `+textIn("#wf-error", `unknown action "send_mesage"`))
	sel, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const t = document.getElementById('wf-text'); return t.value.slice(t.selectionStart, t.selectionEnd) + '|' + t.getAttribute('aria-invalid'); })()`))
	if err != nil || sel != "send_mesage|true" {
		t.Errorf("selected after the refusal = %q, %v; want the mistake on line 5 (send_mesage) and aria-invalid", sel, err)
	}
	shootView(t, ctx, string(axe), "workflow-error")

	do(t, ctx, "publish the deploy", chromedp.SetValue(definition, wfDeploy), chromedp.Click(button("Publish workflow")))
	waitJS(t, ctx, "the deploy listed", textIn(".wf-def", "deploy")+` && `+textIn(".wf-def", "Run by hand"))

	// Run it from the button; the trace waits at the gate.
	do(t, ctx, "run the deploy", chromedp.Click(button("Run deploy")))
	waitJS(t, ctx, "the trace waiting at the gate", textIn(".wf-trace h3", "deploy: Waiting for approval")+
		` && !!document.querySelector('.wf-step[data-step=gate][data-status=running]') && !!document.querySelector('.wf-step[data-step=post][data-status=pending]')`)
	waitJS(t, ctx, "the Approve button", `!!document.evaluate("//button[normalize-space(.)='Approve']", document, null, 9, null).singleNodeValue`)
	shootView(t, ctx, string(axe), "workflow-approval")
	if got := messages(); len(got) != 0 {
		t.Fatalf("messages before the approval: %q", got)
	}
	do(t, ctx, "approve", chromedp.Click(button("Approve")))
	waitJS(t, ctx, "the run to succeed", textIn(".wf-trace h3", "deploy: Succeeded")+
		` && !!document.querySelector('.wf-step[data-step=gate][data-status=approved]') && !!document.querySelector('.wf-step[data-step=post][data-status=succeeded]')`)
	waitJS(t, ctx, "who approved", textIn(".wf-step[data-step=gate] .wf-by", "Approved by"))
	waitJS(t, ctx, "the message the run posted, not its id", textIn(".wf-step[data-step=post] .wf-posted", "Posted: deploying after approved"))
	// In the channel the message goes by the workflow's name, not the
	// relay's key that signs it.
	waitJS(t, ctx, "the posted message named for its workflow", `[...document.querySelectorAll('.msg')].some((m) => m.textContent.includes('deploying after approved') && `+
		`m.querySelector('.author').textContent === 'deploy' && [...m.querySelectorAll('.badge')].some((b) => b.textContent === 'workflow') && m.querySelector('.owned').textContent.startsWith('for '))`)
	shootView(t, ctx, string(axe), "workflow-trace")
	if got := messages(); len(got) != 1 || got[0] != "deploying after approved" {
		t.Fatalf("messages after the approval = %q; want the deploy message once", got)
	}

	// Run again and deny: the run stops and posts nothing.
	do(t, ctx, "run the deploy again", chromedp.Click(button("Run deploy")))
	waitJS(t, ctx, "the second run waiting", `document.querySelectorAll('.wf-run').length === 2 && `+textIn(".wf-trace h3", "deploy: Waiting for approval"))
	waitJS(t, ctx, "the Deny button", `!!document.evaluate("//button[normalize-space(.)='Deny']", document, null, 9, null).singleNodeValue`)
	do(t, ctx, "deny", chromedp.Click(button("Deny")))
	waitJS(t, ctx, "the run denied", textIn(".wf-trace h3", "deploy: Denied")+
		` && !!document.querySelector('.wf-step[data-step=gate][data-status=denied]') && !!document.querySelector('.wf-step[data-step=post][data-status=pending]')`)
	if got := messages(); len(got) != 1 {
		t.Fatalf("messages after the denial = %q; want only the first run's", got)
	}

	// Re-run the denied run, then cancel the re-run.
	do(t, ctx, "re-run", chromedp.Click(button("Re-run")))
	waitJS(t, ctx, "the re-run waiting", `document.querySelectorAll('.wf-run').length === 3 && `+textIn(".wf-trace h3", "deploy: Waiting for approval")+` && `+textIn(".wf-trace", "re-run of"))
	do(t, ctx, "cancel the re-run", chromedp.Click(button("Cancel run")))
	waitJS(t, ctx, "the re-run cancelled", textIn(".wf-trace h3", "deploy: Cancelled"))
	if got := messages(); len(got) != 1 {
		t.Fatalf("messages after the cancel = %q; want only the first run's", got)
	}

	// A step that names someone else has no buttons here; their answer,
	// signed elsewhere, shows in the trace as it comes.
	const named = "7a1c2d4e-3333-4000-8000-0000000000a2"
	def := nostr.Event{Kind: 30620, CreatedAt: nostr.Now(), Content: "name: release\ntrigger: {on: manual}\nsteps:\n  - id: gate\n    action: request_approval\n    from: " + otherPK +
		"\n    message: release?\n  - {id: post, action: send_message, text: released}\n", Tags: nostr.Tags{{"d", named}, {"h", ch}}}
	def.Sign(sk)
	if err := owner.Publish(rctx, def); err != nil {
		t.Fatalf("publish the release workflow: %v", err)
	}
	waitJS(t, ctx, "the release listed", textIn(".wf-def", "release"))
	do(t, ctx, "run the release", chromedp.Click(button("Run release")))
	waitJS(t, ctx, "the release waiting for another", textIn(".wf-trace h3", "release: Waiting for approval")+` && `+textIn(".wf-step[data-step=gate] .hint", "Waiting for"))
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.wf-step[data-step=gate] button').length`)); n != 0 {
		t.Fatalf("%d buttons on a step that names someone else", n)
	}
	reqs, err := owner.QuerySync(rctx, nostr.Filter{Kinds: []int{46010}, Tags: nostr.TagMap{"h": {ch}}})
	if err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, r := range reqs {
		if r.Content != "" && strings.HasPrefix(r.Content, "release?") {
			if tg := r.Tags.Find("token"); tg != nil {
				token = tg[1]
			}
		}
	}
	if token == "" {
		t.Fatalf("no approval request for the release among %d", len(reqs))
	}
	other := authedURL(t, rctx, "ws"+strings.TrimPrefix(base, "http"), otherSK)
	sum := sha256.Sum256([]byte(token))
	grant := nostr.Event{Kind: 46030, CreatedAt: nostr.Now(), Tags: nostr.Tags{{"d", hex.EncodeToString(sum[:])}}}
	grant.Sign(otherSK)
	if err := other.Publish(rctx, grant); err != nil {
		t.Fatalf("grant as the named approver: %v", err)
	}
	waitJS(t, ctx, "the release approved elsewhere", textIn(".wf-trace h3", "release: Succeeded")+` && `+textIn(".wf-step[data-step=gate] .wf-by", "Approved by"))
	for _, e := range consoleErrors() {
		t.Errorf("browser console: %s", e)
	}
}
