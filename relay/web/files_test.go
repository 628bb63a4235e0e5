package web_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestFilesModule runs files.js's parsing under node: imeta tags become
// attachments (the hash lowercased, a tag without a valid hash or with a
// repeated field read by its first value), the text loses only the lines
// that are a file's URL, a descriptor's imeta tag reads back whole, and
// sizes read as people write them.
func TestFilesModule(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIP(loud): node is not installed; files.js is not tested")
	}
	h := strings.Repeat("ab", 32)
	url := "http://relay.example/" + h + ".png"
	events := []map[string]any{
		{"tags": [][]string{{"h", "c"}, {"imeta", "url " + url, "m image/png", "x " + strings.ToUpper(h), "size 10", "m text/html", "alt a b.png"}}},
		{"tags": [][]string{{"imeta", "url http://x/y", "x ../../relay.key"}, {"imeta", "url http://x/z"}, {"imeta"}, {"p", h}}},
	}
	desc := map[string]any{"url": url, "sha256": h, "size": 4757, "type": "image/png", "dim": "1200x800", "thumb": "http://relay.example/thumb/" + h}
	dir, _ := filepath.Abs(filepath.Join("static", "js"))
	in, _ := json.Marshal(map[string]any{"dir": dir, "events": events, "text": "look\n" + url + "\nsee " + url + " too", "descriptor": desc, "sizes": []int{500, 2048, 5 << 20}})
	cmd := exec.Command(node, filepath.Join("testdata", "files.mjs"))
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node files.mjs: %v\n%s", err, stderr.String())
	}
	var out struct {
		Files     [][]map[string]string
		Text      string
		RoundTrip []map[string]string
		Sizes     []string
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("files.mjs output %s: %v", b, err)
	}
	want := map[string]string{"url": url, "m": "image/png", "x": h, "size": "10", "alt": "a b.png"}
	if len(out.Files) != 2 || len(out.Files[0]) != 1 || !reflect.DeepEqual(out.Files[0][0], want) {
		t.Errorf("attachments of the first event = %v; want [%v]", out.Files[0], want)
	}
	if len(out.Files[1]) != 0 {
		t.Errorf("attachments without a valid hash = %v; want none", out.Files[1])
	}
	if out.Text != "look\nsee "+url+" too" {
		t.Errorf("withoutURLs = %q", out.Text)
	}
	back := map[string]string{"url": url, "m": "image/png", "x": h, "size": "4757", "dim": "1200x800", "thumb": desc["thumb"].(string), "alt": "shot.png"}
	if len(out.RoundTrip) != 1 || !reflect.DeepEqual(out.RoundTrip[0], back) {
		t.Errorf("imetaTag read back = %v; want %v", out.RoundTrip, back)
	}
	if strings.Join(out.Sizes, "|") != "500 B|2 KB|5.0 MB" {
		t.Errorf("size() = %v", out.Sizes)
	}
}
