package cli

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"buzzbox/internal/workspace/relayclient"
	"buzzbox/relay"
)

// TestFilesSendAndGet attaches a file to a message in a private channel,
// fetches it back, and checks that a relay member outside the channel
// cannot, and that a file over the relay's limit is refused naming it.
func TestFilesSendAndGet(t *testing.T) {
	me, bob := newKey(t), newKey(t)
	r, err := relay.Start(relay.Config{DataDir: t.TempDir(), Owner: me.pk, Allow: []string{bob.pk}, MaxBlobBytes: 64 << 10}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w := &testSpace{r: &plainRelay{base: r.HTTPURL()}, me: me}
	var created struct {
		relayclient.Result
		ChannelID string `json:"channel_id"`
	}
	w.ok(t, &created, "", "channels", "create", "--name", "secret", "--type", "stream", "--visibility", "private")

	dir := t.TempDir()
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 640, 480)))
	shot := filepath.Join(dir, "shot.png")
	os.WriteFile(shot, buf.Bytes(), 0o600)

	var sent sendResult
	w.ok(t, &sent, "", "messages", "send", "--channel", created.ChannelID, "--content", "look", "--file", shot)
	var got []outEvent
	w.ok(t, &got, "", "messages", "get", "--channel", created.ChannelID)
	if len(got) != 1 {
		t.Fatalf("messages get = %v", got)
	}
	var imeta []string
	for _, tag := range got[0].Tags {
		if tag[0] == "imeta" {
			imeta = tag
		}
	}
	joined := strings.Join(imeta, "|")
	hash := ""
	for _, f := range imeta {
		if v, ok := strings.CutPrefix(f, "x "); ok {
			hash = v
		}
	}
	for _, want := range []string{"url " + r.HTTPURL() + "/" + hash + ".png", "m image/png", "dim 640x480", "thumb " + r.HTTPURL() + "/thumb/" + hash, "alt shot.png"} {
		if hash == "" || !strings.Contains(joined, want) {
			t.Errorf("imeta %v lacks %q", imeta, want)
		}
	}
	if !strings.HasPrefix(got[0].Content, "look\n"+r.HTTPURL()+"/"+hash) {
		t.Errorf("content %q; want the text then the file's URL", got[0].Content)
	}

	out := filepath.Join(dir, "back.png")
	var info map[string]any
	w.ok(t, &info, "", "files", "get", hash, "--output", out)
	if b, _ := os.ReadFile(out); !bytes.Equal(b, buf.Bytes()) || info["sha256"] != hash {
		t.Errorf("files get wrote %d bytes (%v); want the PNG", len(b), info)
	}
	res := runBuzz(t, r.HTTPURL(), me, "", "files", "get", r.HTTPURL()+"/"+hash+".png")
	if res.code != 0 || res.stdout != buf.String() {
		t.Errorf("files get URL to stdout: exit %d, %d bytes, stderr %s", res.code, len(res.stdout), res.stderr)
	}
	fails(t, runBuzz(t, r.HTTPURL(), bob, "", "files", "get", hash), 3, catAuth)

	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, make([]byte, 100<<10), 0o600)
	res = runBuzz(t, r.HTTPURL(), me, "", "messages", "send", "--channel", created.ChannelID, "--file", big)
	fails(t, res, 1, catUser)
	var e struct{ Message string }
	json.Unmarshal([]byte(res.stderr), &e)
	if !strings.Contains(e.Message, "65536 bytes") {
		t.Errorf("oversize error %q; want the limit named", e.Message)
	}
}
