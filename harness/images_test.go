package harness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/agent/llm/llmtest"
	"buzzbox/internal/acp"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
)

// uploadBlob puts data on the world's relay as the owner, for the world's
// channel, and returns its sha256.
func (w *world) uploadBlob(t *testing.T, data []byte) string {
	t.Helper()
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	ev := &nostr.Event{Kind: workspace.KindMediaAuth, Content: "upload", CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"t", "upload"}, {"x", hash}, {"h", w.channel}, {"expiration", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}}}
	if err := w.owner.SignEvent(ev); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev)
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPut, w.relay.HTTPURL()+"/upload", bytes.NewReader(data))
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(raw))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload: %s %s", resp.Status, resp.Header.Get("X-Reason"))
	}
	return hash
}

// promptBlocks returns the content blocks of the agent's first prompt.
func (w *world) promptBlocks(t *testing.T) []acp.ContentBlock {
	t.Helper()
	waitFor(t, "the prompt", 15*time.Second, func() bool { return w.count("session/prompt") >= 1 })
	for _, l := range w.agentLog() {
		if l.Method == "session/prompt" {
			var p acp.PromptParams
			json.Unmarshal(l.Params, &p)
			return p.Prompt
		}
	}
	return nil
}

// TestPromptImages: an image attached to a mention reaches an agent that
// takes images as an image block, fetched from the relay by hash and
// checked; a missing one and a non-image are left to the text; an agent
// without the capability gets the text alone.
func TestPromptImages(t *testing.T) {
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)))
	pic := buf.Bytes()
	for _, takes := range []bool{true, false} {
		t.Run("images="+strconv.FormatBool(takes), func(t *testing.T) {
			w := newWorld(t)
			hash := w.uploadBlob(t, pic)
			logHash := w.uploadBlob(t, []byte("ok 1\nFAIL 2\n"))
			missing := hex.EncodeToString(make([]byte, 32))
			var extra []string
			if takes {
				extra = append(extra, envFakeImages+"=1")
			}
			w.startHarness(w.harnessEnv("echo", extra...))
			w.mention("what is wrong here? "+w.relay.HTTPURL()+"/"+hash+".png",
				nostr.Tag{"imeta", "url https://elsewhere.example/" + hash + ".png", "m image/png", "x " + hash, "size " + strconv.Itoa(len(pic))},
				nostr.Tag{"imeta", "url " + w.relay.HTTPURL() + "/" + missing + ".png", "m image/png", "x " + missing},
				nostr.Tag{"imeta", "url " + w.relay.HTTPURL() + "/" + logHash + ".txt", "m text/plain", "x " + logHash})
			var images []acp.ContentBlock
			blocks := w.promptBlocks(t)
			for _, b := range blocks {
				if b.Type == "image" {
					images = append(images, b)
				}
			}
			if !takes {
				if len(images) != 0 {
					t.Fatalf("an agent without promptCapabilities.image got %d image blocks", len(images))
				}
				return
			}
			if len(images) != 1 || images[0].MimeType != "image/png" || images[0].Data != base64.StdEncoding.EncodeToString(pic) {
				t.Fatalf("image blocks = %+v; want the one PNG", images)
			}
			if blocks[0].Type != "text" {
				t.Errorf("first block %q; want the text first", blocks[0].Type)
			}
		})
	}
}

// TestEndToEndImage runs relay → harness → buzz-agent → model: a PNG
// attached to a mention reaches the model's request as an image.
func TestEndToEndImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	var buf bytes.Buffer
	png.Encode(&buf, image.NewGray(image.Rect(0, 0, 40, 30)))
	w := newWorld(t)
	hash := w.uploadBlob(t, buf.Bytes())
	model := llmtest.New(t, llmtest.Reply{Text: "a grey rectangle"})
	env := w.agentEnv(t, "BUZZ_AGENT_PROVIDER=openai", "OPENAI_COMPAT_API=chat", "OPENAI_COMPAT_API_KEY=k",
		"OPENAI_COMPAT_MODEL=m", "OPENAI_COMPAT_BASE_URL="+model.URL, "HOME="+t.TempDir())
	w.runHarness(t, env, timing{}, "--mcp-command", "")
	w.mention("what is this?", nostr.Tag{"imeta", "url " + w.relay.HTTPURL() + "/" + hash + ".png", "m image/png", "x " + hash})
	want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
	waitFor(t, "the model's request with the image", 60*time.Second, func() bool {
		for _, b := range model.Bodies() {
			if bytes.Contains(b, []byte(want)) && bytes.Contains(b, []byte("what is this?")) {
				return true
			}
		}
		return false
	})
}
