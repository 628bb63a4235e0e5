package cli

import (
	"testing"

	"buzzbox/internal/workspace/relayclient"
	"buzzbox/relay"

	"github.com/nbd-wtf/go-nostr"
)

// TestAgainstBuzzRelay runs the round trips against buzz-relay itself.
func TestAgainstBuzzRelay(t *testing.T) {
	me, stranger := newKey(t), newKey(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: me.pk}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w := &testSpace{r: &plainRelay{base: r.HTTPURL()}, me: me}

	var created struct {
		relayclient.Result
		ChannelID string `json:"channel_id"`
	}
	w.ok(t, &created, "", "channels", "create", "--name", "general", "--type", "stream", "--visibility", "open")
	testChannel := created.ChannelID
	var root, reply sendResult
	w.ok(t, &root, "", "messages", "send", "--channel", testChannel, "--content", "hello relay")
	w.ok(t, &reply, "", "messages", "send", "--channel", testChannel, "--content", "in thread", "--reply-to", root.EventID)
	var got []outEvent
	w.ok(t, &got, "", "messages", "get", "--channel", testChannel)
	if len(got) != 2 || got[0].ID != root.EventID && got[1].ID != root.EventID {
		t.Fatalf("messages get = %v; want both messages", got)
	}
	var thread []outEvent
	w.ok(t, &thread, "", "messages", "thread", "--channel", testChannel, "--event", reply.EventID)
	if len(thread) != 2 || thread[0].ID != root.EventID || !tagsEqual(thread[1].Tags[1:2], nostr.Tags{{"e", root.EventID, "", "reply"}}) {
		t.Fatalf("thread = %v", thread)
	}
	w.ok(t, nil, "", "reactions", "add", "--event", root.EventID, "--emoji", "👀")
	var reactions struct{ Reactions []reactionGroup }
	w.ok(t, &reactions, "", "reactions", "get", "--event", root.EventID)
	if len(reactions.Reactions) != 1 || reactions.Reactions[0].Emoji != "👀" {
		t.Fatalf("reactions = %+v", reactions)
	}
	var pres relayclient.Result // ephemeral: over websocket with NIP-42, never the bridge
	w.ok(t, &pres, "", "users", "set-presence", "--status", "online")
	if !pres.Accepted {
		t.Fatalf("presence = %+v", pres)
	}
	res := runBuzz(t, r.HTTPURL(), stranger, "", "messages", "send", "--channel", testChannel, "--content", "let me in")
	fails(t, res, 3, catAuth)
	var list []channelInfo
	w.ok(t, &list, "", "channels", "list")
	if len(list) != 1 || list[0].ChannelID != testChannel || list[0].Name != "general" {
		t.Fatalf("channels list = %+v", list)
	}
	var members []map[string]string
	w.ok(t, &members, "", "channels", "members", "--channel", testChannel)
	if len(members) == 0 || members[0]["pubkey"] != me.pk {
		t.Fatalf("channels members = %v", members)
	}
}
