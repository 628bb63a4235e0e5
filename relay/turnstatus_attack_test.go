package relay

import (
	"context"
	"strings"
	"testing"
	"time"

	"buzzbox/internal/workspace"

	"github.com/nbd-wtf/go-nostr"
)

// TestAttackTurnStatusOfPrivateChannel: an agent's turn status and a
// stop request in a private channel are ephemeral and h-tagged; a relay
// member outside the channel, subscribed to their kinds without naming
// the channel, must get neither, and may not send a stop into it. A
// channel member gets both.
func TestAttackTurnStatusOfPrivateChannel(t *testing.T) {
	alice, agent, bob, mallory := newKey(t), newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", agent.pk+","+bob.pk+","+mallory.pk)
	ca := login(t, b.url, alice)
	h := nostr.Tag{"h", chanA}
	mustPublish(t, ca, signed(t, alice, workspace.KindCreateGroup, "", h, nostr.Tag{"visibility", "private"}))
	mustPublish(t, ca, signed(t, alice, workspace.KindAddUser, "", h, nostr.Tag{"p", agent.pk}, nostr.Tag{"p", bob.pk}))
	msg := signed(t, bob, workspace.KindStream, "@agent deploy", h)
	cb := login(t, b.url, bob)
	mustPublish(t, cb, msg)

	kinds := nostr.Filters{{Kinds: []int{workspace.KindTurnStatus, workspace.KindTurnStop}}}
	cm := login(t, b.url, mallory)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spy, err := cm.Subscribe(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := cb.Subscribe(ctx, kinds)
	if err != nil {
		t.Fatal(err)
	}
	<-spy.EndOfStoredEvents
	<-watch.EndOfStoredEvents

	cg := login(t, b.url, agent)
	status := signed(t, agent, workspace.KindTurnStatus, `{"state":"working","step":"shell: deploy --prod"}`, h, nostr.Tag{"e", msg.ID})
	mustPublish(t, cg, status)
	stop := signed(t, bob, workspace.KindTurnStop, "", h, nostr.Tag{"e", msg.ID})
	mustPublish(t, cb, stop)
	forged := signed(t, mallory, workspace.KindTurnStop, "", h, nostr.Tag{"e", msg.ID})
	if reason := refused(t, cm, forged); !strings.Contains(reason, "restricted") && !strings.Contains(reason, "blocked") {
		t.Errorf("outsider's stop into a private channel refused with %q", reason)
	}

	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case ev := <-watch.Events:
			got[ev.ID] = true
		case <-ctx.Done():
			t.Fatalf("the channel member got %d of the 2 events", len(got))
		}
	}
	if got[forged.ID] {
		t.Errorf("the outsider's stop reached the channel")
	}
	select {
	case ev := <-spy.Events:
		t.Errorf("outsider got kind %d of a private channel: %s", ev.Kind, ev.Content)
	case <-time.After(time.Second):
	}
}

// TestAttackForgedSignatureRefused: the built relay, whose signature
// check parses each author's key once, still refuses an event signed by
// another key, or with its id or content changed, stored or ephemeral,
// also after the author's key is in its cache.
func TestAttackForgedSignatureRefused(t *testing.T) {
	alice, mallory := newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", mallory.pk)
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	mustPublish(t, ca, signed(t, alice, 1, "warms the key cache"))
	for _, kind := range []int{1, workspace.KindTurnStatus} {
		real := signed(t, mallory, kind, "mallory's")
		forged := real
		forged.PubKey = alice.pk
		forged.ID = forged.GetID()
		if msg := refused(t, cm, forged); !strings.HasSuffix(msg, "invalid: signature is invalid") {
			t.Errorf("kind %d under alice's key with mallory's signature refused with %q", kind, msg)
		}
		changed := real
		changed.Content = "not mallory's"
		if msg := refused(t, cm, changed); !strings.HasSuffix(msg, "invalid: id is computed incorrectly") {
			t.Errorf("kind %d with its content changed refused with %q", kind, msg)
		}
	}
}

// TestAttackObserverFramesOfAnotherOwner: an agent's NIP-AO observer
// frames (its transcript, kind 24200, encrypted to its owner) reach the
// owner they p-tag and nobody else on the relay: a member subscribing to
// every frame, or to the agent's, or naming the owner's p tag, gets none.
func TestAttackObserverFramesOfAnotherOwner(t *testing.T) {
	alice, agent, mallory := newKey(t), newKey(t), newKey(t)
	b := runBinary(t, t.TempDir(), "--owner", alice.pk, "--allow", agent.pk+","+mallory.pk)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ca, cm := login(t, b.url, alice), login(t, b.url, mallory)
	frames := []int{workspace.KindObserverFrame}
	mine, err := ca.Subscribe(ctx, nostr.Filters{{Kinds: frames, Tags: nostr.TagMap{"p": {alice.pk}}}})
	if err != nil {
		t.Fatal(err)
	}
	spy, err := cm.Subscribe(ctx, nostr.Filters{{Kinds: frames}, {Authors: []string{agent.pk}}, {Tags: nostr.TagMap{"p": {alice.pk}}}})
	if err != nil {
		t.Fatal(err)
	}
	<-mine.EndOfStoredEvents
	<-spy.EndOfStoredEvents
	frame := signed(t, agent, workspace.KindObserverFrame, "AgFh…ciphertext", nostr.Tag{"p", alice.pk}, nostr.Tag{"agent", agent.pk}, nostr.Tag{"frame", "telemetry"})
	mustPublish(t, login(t, b.url, agent), frame)
	select {
	case ev := <-mine.Events:
		if ev.ID != frame.ID {
			t.Errorf("the owner got %s; want the frame", ev.ID)
		}
	case <-ctx.Done():
		t.Fatal("the owner never got the agent's frame")
	}
	select {
	case ev := <-spy.Events:
		t.Errorf("another member got the agent's observer frame (kind %d, tags %v)", ev.Kind, ev.Tags)
	case <-time.After(time.Second):
	}
}
