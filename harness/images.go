package harness

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nbd-wtf/go-nostr"

	"buzzbox/harness/acpclient"
	"buzzbox/internal/acp"
	"buzzbox/internal/workspace"
	"buzzbox/internal/workspace/nip98"
	"buzzbox/internal/workspace/nipoa"
)

// Images attached to a prompt's events (NIP-92 imeta tags naming files on
// the relay, as the web client and `buzz messages send --file` write
// them) go to an agent that advertises promptCapabilities.image as image
// content blocks after the text. They are fetched from the relay the
// harness serves, by hash only (an imeta url naming another host is not
// followed), with a kind 24242 authorization the agent signs, and must
// hash to what the tag says. An agent without the capability, and any
// image that is not fetched, keeps the text alone, which carries the
// file's URL.

const (
	// maxPromptImages bounds the images of one prompt: a screenshot or
	// a few; more cost input tokens without helping the agent.
	maxPromptImages = 4
	// maxPromptImageBytes bounds one image, and maxPromptImagesBytes all
	// of a prompt's: the prompt is one JSON-RPC line, 4/3 of this in
	// base64, and buzz-agent reads lines of at most 4 MB by default (a
	// model API's own per-image limit, Anthropic's 5 MB, is higher). A
	// bigger image stays a link in the text.
	maxPromptImageBytes  = 2 << 20
	maxPromptImagesBytes = 5 << 19 // 2.5 MB
	// imageFetchTimeout bounds fetching one image from the relay.
	imageFetchTimeout = 20 * time.Second
	// imageAuthTTL is how long the fetch authorization holds.
	imageAuthTTL = 5 * time.Minute
)

// promptImageType reports whether model APIs take images of type m.
func promptImageType(m string) bool {
	switch m {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}

// isImageHash reports whether s is a sha256 in lowercase hex.
func isImageHash(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size && strings.ToLower(s) == s
}

// promptImage is one image named by an imeta tag.
type promptImage struct{ hash, mime string }

// eventImages lists the images of evs' imeta tags, at most
// maxPromptImages, each once.
func eventImages(evs []*Event) []promptImage {
	var out []promptImage
	seen := map[string]bool{}
	for _, e := range evs {
		for _, t := range e.Tags {
			if len(t) < 2 || t[0] != "imeta" {
				continue
			}
			f := map[string]string{}
			for _, part := range t[1:] {
				if k, v, ok := strings.Cut(part, " "); ok {
					if _, dup := f[k]; !dup {
						f[k] = v
					}
				}
			}
			h, m := strings.ToLower(f["x"]), f["m"]
			if !isImageHash(h) || !promptImageType(m) || seen[h] {
				continue
			}
			if n, err := strconv.ParseInt(f["size"], 10, 64); err == nil && n > maxPromptImageBytes {
				continue
			}
			seen[h] = true
			out = append(out, promptImage{h, m})
			if len(out) == maxPromptImages {
				return out
			}
		}
	}
	return out
}

// imageBlocks fetches the images of evs for agent a, when it takes them.
func (h *harness) imageBlocks(ctx context.Context, a *acpclient.Agent, evs []*Event) []acp.ContentBlock {
	if a == nil || !a.AcceptsImages() {
		return nil
	}
	var blocks []acp.ContentBlock
	total := 0
	for _, img := range eventImages(evs) {
		data, err := h.fetchImage(ctx, img)
		if err == nil && total+len(data) > maxPromptImagesBytes {
			err = fmt.Errorf("the prompt's images would pass %d bytes", maxPromptImagesBytes)
		}
		if err != nil {
			h.log.Warn("attached image not passed to the agent", "sha256", img.hash, "err", err)
			continue
		}
		total += len(data)
		blocks = append(blocks, acp.ContentBlock{Type: "image", MimeType: img.mime, Data: base64.StdEncoding.EncodeToString(data)})
	}
	return blocks
}

func (h *harness) fetchImage(ctx context.Context, img promptImage) ([]byte, error) {
	ev := &nostr.Event{Kind: workspace.KindMediaAuth, Content: "Read an attached image", CreatedAt: nostr.Now(), Tags: nostr.Tags{
		{"t", "get"}, {"x", img.hash}, {"expiration", strconv.FormatInt(time.Now().Add(imageAuthTTL).Unix(), 10)}}}
	if h.cfg.AuthTag != "" {
		var tag []string
		if err := json.Unmarshal([]byte(h.cfg.AuthTag), &tag); err == nil && len(tag) == 4 && tag[0] == nipoa.TagName {
			ev.Tags = append(ev.Tags, tag)
		}
	}
	if err := h.cfg.Secret.SignEvent(ev); err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	raw, _ := json.Marshal(ev)
	ctx, cancel := context.WithTimeout(ctx, imageFetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.io.Base()+"/"+img.hash, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", nip98.Scheme+" "+base64.StdEncoding.EncodeToString(raw))
	resp, err := h.io.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("relay answered %s: %s", resp.Status, resp.Header.Get("X-Reason"))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxPromptImageBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxPromptImageBytes {
		return nil, fmt.Errorf("over %d bytes", maxPromptImageBytes)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != img.hash {
		return nil, fmt.Errorf("the relay sent bytes of another hash")
	}
	if got := http.DetectContentType(data); got != img.mime {
		return nil, fmt.Errorf("content is %s, the tag says %s", got, img.mime)
	}
	return data, nil
}
